"""Lite topics (RocketMQ 5.5): what mqadmin's lite commands read, and its ``triggerLiteDispatch``.

A lite topic lives in a light queue of its own under a parent topic whose ``message.type`` is ``LITE``
(see :mod:`rocketmq_wire.headers.lite`). mqadmin asks about one the way these functions do:

* ``getBrokerLiteInfo``: one broker (``-b``), or every master of a cluster (``-c``);
* ``getParentTopicInfo``, ``getLiteTopicInfo``, ``getLiteGroupInfo``, ``getLiteClientInfo``,
  ``triggerLiteDispatch``: the broker to ask of each broker group in the parent topic's route (its master,
  else a slave), each on its own: a broker that refuses or cannot be reached is reported with its error
  (:class:`BrokerAnswer`) and the others are still asked, as mqadmin prints ``[broker] error.`` and goes on.
  ``getLiteGroupInfo`` also adds the brokers' answers up (:class:`LiteGroupLag`).

Every broker asked is checked first to be 5.5.0 or later (:class:`~admin.errors.BrokerVersionError`): an
older one does not know the requests. Their codes need more than 16 bits, so they go in the JSON
serialization only; an admin set to ROCKETMQ is refused before anything is sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from admin.brokers import require_broker_version
from admin.cluster import cluster_brokers, route_brokers, topic_route
from admin.errors import AdminError
from admin.rpc import AdminRpc, check
from rocketmq_wire import features
from rocketmq_wire.bodies.base import JsonBody
from rocketmq_wire.bodies.lite import (
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteGroupInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
    LiteLagInfo,
)
from rocketmq_wire.codes import RequestCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.lite import (
    DEFAULT_MAX_COUNT,
    GetLiteClientInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
)

T = TypeVar("T")
B = TypeVar("B", bound=JsonBody)

#: mqadmin ``getLiteGroupInfo``'s ``-k`` default: how many of the most lagging lite topics each broker lists.
DEFAULT_TOP_K = 20
#: How many of a client's lite topics mqadmin ``getLiteClientInfo`` asks each broker for (the header's
#: initial ``maxCount``); a 5.5.0 broker lists at most 10,000 whatever is asked.
DEFAULT_CLIENT_LITE_TOPICS = DEFAULT_MAX_COUNT

_FEATURE = "the lite-topic admin requests"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerAnswer(Generic[T]):
    """One broker's answer to a lite read, or why there is none (``error``: its refusal or silence)."""

    broker_name: str
    addr: str
    answer: T | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LiteGroupLag:
    """mqadmin ``getLiteGroupInfo``: each broker's answer and their sum.

    ``total_lag_count`` adds up the brokers' positive totals; ``earliest_unconsumed_timestamp`` is the
    oldest one any broker gave (``None`` when none did). The top-K lists are every broker's merged, by lag
    count (most first) and by the oldest unconsumed message (oldest first); both stay empty when one lite
    topic was asked about.
    """

    group: str
    parent_topic: str
    lite_topic: str | None
    brokers: tuple[BrokerAnswer[GetLiteGroupInfoResponseBody], ...]
    total_lag_count: int
    earliest_unconsumed_timestamp: int | None
    lag_count_top_k: tuple[LiteLagInfo, ...]
    lag_timestamp_top_k: tuple[LiteLagInfo, ...]


def _require_json(rpc: AdminRpc) -> None:
    if rpc.serialize_type != SerializeType.JSON:
        raise AdminError(
            "the lite-topic requests (codes 2000xx) need the JSON serialization; the ROCKETMQ header "
            "holds a request code in 16 bits"
        )


async def _require_lite(rpc: AdminRpc, addrs: Sequence[str]) -> None:
    _require_json(rpc)
    for addr in addrs:
        await require_broker_version(rpc, addr, features.LITE_TOPIC, _FEATURE)


async def _read(
    rpc: AdminRpc, addr: str, code: int, header: CommandHeader | None, body_type: type[B], what: str
) -> B:
    response = check(await rpc.server(addr, RemotingCommand.request(code, header)), what, addr)
    if not response.body:
        raise AdminError(f"{what}: {addr} answered without a body")
    try:
        return body_type.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable {what} from {addr}: {exc}") from exc


async def _each_broker(
    rpc: AdminRpc, topic: str, ask: Callable[[str], Awaitable[T]], broker_name: str | None = None
) -> list[BrokerAnswer[T]]:
    """``ask(addr)`` of each broker group of ``topic``'s route (of the one named ``broker_name``), a
    failure recorded as that broker's answer."""
    targets = [(name, addr) for name, addr in route_brokers(await topic_route(rpc, topic))]
    if broker_name is not None:
        targets = [(name, addr) for name, addr in targets if name == broker_name]
        if not targets:
            raise AdminError(f"topic {topic!r} has no broker named {broker_name!r} in its route")
    await _require_lite(rpc, [addr for _, addr in targets])
    answers: list[BrokerAnswer[T]] = []
    for name, addr in targets:
        try:
            answers.append(BrokerAnswer(name, addr, answer=await ask(addr)))
        except AdminError as exc:
            answers.append(BrokerAnswer(name, addr, error=str(exc)))
    return answers


async def broker_lite_info(rpc: AdminRpc, broker_addr: str) -> GetBrokerLiteInfoResponseBody:
    """One broker's lite figures (mqadmin ``getBrokerLiteInfo -b``)."""
    await _require_lite(rpc, [broker_addr])
    return await _read(
        rpc, broker_addr, RequestCode.GET_BROKER_LITE_INFO, None, GetBrokerLiteInfoResponseBody, "lite info"
    )


async def cluster_lite_info(rpc: AdminRpc, cluster: str) -> list[BrokerAnswer[GetBrokerLiteInfoResponseBody]]:
    """Every master's lite figures (mqadmin ``getBrokerLiteInfo -c``), one answer or error each."""
    masters = await cluster_brokers(rpc, cluster, masters_only=True)
    await _require_lite(rpc, [b.addr for b in masters])
    answers: list[BrokerAnswer[GetBrokerLiteInfoResponseBody]] = []
    for broker in masters:
        try:
            info = await _read(
                rpc,
                broker.addr,
                RequestCode.GET_BROKER_LITE_INFO,
                None,
                GetBrokerLiteInfoResponseBody,
                "lite info",
            )
            answers.append(BrokerAnswer(broker.broker_name, broker.addr, answer=info))
        except AdminError as exc:
            answers.append(BrokerAnswer(broker.broker_name, broker.addr, error=str(exc)))
    return answers


async def parent_topic_info(rpc: AdminRpc, topic: str) -> list[BrokerAnswer[GetParentTopicInfoResponseBody]]:
    """A LITE parent topic on each broker of its route (mqadmin ``getParentTopicInfo``)."""
    header = GetParentTopicInfoRequestHeader(topic=topic)
    what = f"parent topic info of {topic!r}"
    return await _each_broker(
        rpc,
        topic,
        lambda addr: _read(
            rpc, addr, RequestCode.GET_PARENT_TOPIC_INFO, header, GetParentTopicInfoResponseBody, what
        ),
    )


async def lite_topic_info(
    rpc: AdminRpc, parent_topic: str, lite_topic: str
) -> list[BrokerAnswer[GetLiteTopicInfoResponseBody]]:
    """One lite topic on each broker of its parent's route: offsets, subscribers (mqadmin
    ``getLiteTopicInfo``)."""
    header = GetLiteTopicInfoRequestHeader(parent_topic=parent_topic, lite_topic=lite_topic)
    what = f"lite topic info of {lite_topic!r}"
    return await _each_broker(
        rpc,
        parent_topic,
        lambda addr: _read(
            rpc, addr, RequestCode.GET_LITE_TOPIC_INFO, header, GetLiteTopicInfoResponseBody, what
        ),
    )


async def lite_group_info(
    rpc: AdminRpc, parent_topic: str, group: str, lite_topic: str | None = None, top_k: int = DEFAULT_TOP_K
) -> LiteGroupLag:
    """A lite group's lag on each broker of the parent topic's route, and the sum (mqadmin
    ``getLiteGroupInfo``): on ``lite_topic`` only when given, else each broker's ``top_k`` most lagging."""
    header = GetLiteGroupInfoRequestHeader(group=group, lite_topic=lite_topic or None, top_k=top_k)
    what = f"lite lag of group {group!r}"
    answers = await _each_broker(
        rpc,
        parent_topic,
        lambda addr: _read(
            rpc, addr, RequestCode.GET_LITE_GROUP_INFO, header, GetLiteGroupInfoResponseBody, what
        ),
    )
    return sum_group_lag(group, parent_topic, lite_topic, answers)


def sum_group_lag(
    group: str,
    parent_topic: str,
    lite_topic: str | None,
    answers: Sequence[BrokerAnswer[GetLiteGroupInfoResponseBody]],
) -> LiteGroupLag:
    """The brokers' lag answers added up as mqadmin does: positive totals summed, the oldest positive
    timestamp, the top-K lists merged and sorted (brokers that failed count for nothing)."""
    bodies = [a.answer for a in answers if a.answer is not None]
    oldest = [b.earliest_unconsumed_timestamp for b in bodies if b.earliest_unconsumed_timestamp > 0]
    by_count = [lag for b in bodies for lag in b.lag_count_top_k or ()]
    by_time = [lag for b in bodies for lag in b.lag_timestamp_top_k or ()]
    return LiteGroupLag(
        group=group,
        parent_topic=parent_topic,
        lite_topic=lite_topic or None,
        brokers=tuple(answers),
        total_lag_count=sum(max(0, b.total_lag_count) for b in bodies),
        earliest_unconsumed_timestamp=min(oldest) if oldest else None,
        lag_count_top_k=tuple(sorted(by_count, key=lambda lag: -lag.lag_count)),
        lag_timestamp_top_k=tuple(sorted(by_time, key=lambda lag: lag.earliest_unconsumed_timestamp)),
    )


async def lite_client_info(
    rpc: AdminRpc, parent_topic: str, group: str, client_id: str, max_count: int = DEFAULT_CLIENT_LITE_TOPICS
) -> list[BrokerAnswer[GetLiteClientInfoResponseBody]]:
    """One client's lite subscriptions on each broker of the parent topic's route, up to ``max_count``
    lite topics each (mqadmin ``getLiteClientInfo``)."""
    if max_count <= 0:
        raise AdminError("max_count must be positive: a 5.5 broker refuses to list fewer than one lite topic")
    header = GetLiteClientInfoRequestHeader(
        parent_topic=parent_topic, group=group, client_id=client_id, max_count=max_count
    )
    what = f"lite subscriptions of client {client_id!r}"
    return await _each_broker(
        rpc,
        parent_topic,
        lambda addr: _read(
            rpc, addr, RequestCode.GET_LITE_CLIENT_INFO, header, GetLiteClientInfoResponseBody, what
        ),
    )


async def trigger_lite_dispatch(
    rpc: AdminRpc,
    parent_topic: str,
    group: str,
    client_id: str | None = None,
    broker_name: str | None = None,
) -> list[BrokerAnswer[None]]:
    """Have each broker of the parent topic's route (the one named ``broker_name``) offer the lite group's
    ready lite topics to its clients again, to ``client_id`` alone when given (mqadmin
    ``triggerLiteDispatch``). A broker that did so has neither answer nor error."""
    header = TriggerLiteDispatchRequestHeader(group=group, client_id=client_id or None)
    what = f"lite dispatch of group {group!r}"

    async def trigger(addr: str) -> None:
        request = RemotingCommand.request(RequestCode.TRIGGER_LITE_DISPATCH, header)
        check(await rpc.server(addr, request), what, addr)

    return await _each_broker(rpc, parent_topic, trigger, broker_name)
