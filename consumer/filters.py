"""SQL92 subscriptions: how they are built, and the question every broker is asked before one is used.

A SQL92 expression (``a > 5 AND region = 'eu'``) is evaluated by the broker against each message's
properties; the client keeps it as written and filters nothing itself (no tag text to compare). An Apache
broker evaluates it only when ``enablePropertyFilter=true`` (off by default) and refuses every pull of it
otherwise -- a consumer that only learnt this while pulling would look stalled. So, as Java's
``MQClientInstance.checkClientInBroker`` does when a consumer starts, the brokers of the topic are sent
CHECK_CLIENT_CONFIG with the subscription first, and a refusal becomes one :class:`FilterRefusedError`
naming the broker and what it said.

Java asks one broker of the topic, picked at random, and assumes the others are configured alike; this asks
each broker of the route (its master, else a slave), so a cluster with one broker left unconfigured is
caught too. A broker that cannot be reached is skipped with a warning: it serves no pulls either, and
refusing to start while one broker is down would cost availability for no gain.

The push and pull consumers use these at ``start`` (and when subscribing while running), the Spark source
when it plans a read; a POP consumer can call :func:`check_subscriptions` the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from consumer.broker_api import BrokerApi
from consumer.errors import BrokerError, FilterRefusedError
from rocketmq_wire.bodies.heartbeat import EXPRESSION_TAG, SUB_ALL, SubscriptionData
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.bodies.subscription import EXPRESSION_SQL92, build_subscription, is_tag_type
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.filters")

#: What to do about each kind of refusal, by the broker's answer code.
_ADVICE: dict[int, str] = {
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: (
        "it does not know CHECK_CLIENT_CONFIG, so it cannot filter by {type}"
    ),
    ResponseCode.SUBSCRIPTION_PARSE_FAILED: "it could not compile the expression",
}
_DEFAULT_ADVICE = (
    "an Apache broker filters by {type} only with enablePropertyFilter=true (broker.conf, or live: "
    "rmq update-broker-config -b ADDR -k enablePropertyFilter -v true)"
)


def subscription_args(topic: str, expression: str | None, sql: str | None) -> tuple[str, str]:
    """The expression and its type for ``subscribe(topic, expression, sql=...)``: a tag expression (``None``
    meaning ``*``) or a SQL92 one, never both; ``ValueError`` for both or a blank SQL92 expression."""
    if sql is None:
        return (SUB_ALL if expression is None else expression), EXPRESSION_TAG
    if expression is not None:
        raise ValueError(f"subscribe to {topic} with a tag expression or with sql, not both")
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError(f"the SQL92 expression for topic {topic} is empty")
    return sql, EXPRESSION_SQL92


def sql_subscription(topic: str, sql: str) -> SubscriptionData:
    """The subscription Java's ``MessageSelector.bySql(sql)`` gives ``topic`` (the wire name): the expression
    as written, type ``SQL92``, no tags; ``ValueError`` for a blank expression."""
    expression, expression_type = subscription_args(topic, None, sql)
    return build_subscription(topic, expression, expression_type)


def needs_check(subscription: SubscriptionData) -> bool:
    """Whether brokers are asked about ``subscription`` first: every broker serves tag filters."""
    return not is_tag_type(subscription.expression_type)


def pull_sub_version(subscription: SubscriptionData) -> int:
    """The ``subVersion`` of a pull that carries its subscription: Java sends the subscription's version only
    for a non-tag type (the broker stamps the filter it builds from the pull with it), else 0."""
    return 0 if is_tag_type(subscription.expression_type) else subscription.sub_version


def brokers_to_ask(route: TopicRouteData) -> list[tuple[str, str]]:
    """``(broker name, address)`` of each broker of the route: its master, else its lowest-id slave."""
    found = []
    for data in route.broker_datas:
        if not data.broker_addrs:
            continue
        addr = data.master_addr() or data.broker_addrs[min(data.broker_addrs)]
        found.append((data.broker_name or addr, addr))
    return found


def refusal(
    error: BrokerError, broker_name: str, *, group: str, subscription: SubscriptionData
) -> FilterRefusedError:
    """The user's view of a broker's refusal: who refused what, its answer, and what would help."""
    expression_type = subscription.expression_type or EXPRESSION_TAG
    advice = _ADVICE.get(error.code, _DEFAULT_ADVICE).format(type=expression_type)
    message = (
        f"broker {broker_name} ({error.addr}) refuses the {expression_type} filter "
        f"{subscription.sub_string!r} of group {group} on topic {subscription.topic}: "
        f"{error.remark or 'no remark'} (code {error.code}); {advice}"
    )
    return FilterRefusedError(
        error.code,
        error.remark,
        error.addr,
        message,
        broker_name=broker_name,
        topic=subscription.topic or "",
        expression_type=subscription.expression_type,
    )


async def check_filter(
    api: BrokerApi,
    route: TopicRouteData | None,
    subscription: SubscriptionData,
    *,
    group: str,
    client_id: str,
) -> int:
    """Ask every broker of ``route`` whether ``group`` may use ``subscription``; how many said yes.

    Raises :class:`FilterRefusedError` at the first refusal. Nothing is asked for a tag subscription, nor
    without a route (the topic does not exist yet: Java asks nothing then either).
    """
    if not needs_check(subscription) or route is None:
        return 0
    accepted = 0
    for broker_name, addr in brokers_to_ask(route):
        try:
            await api.check_client_config(addr, group, client_id, subscription)
        except BrokerError as exc:
            raise refusal(exc, broker_name, group=group, subscription=subscription) from None
        except RemotingError as exc:
            logger.warning(
                "group %s: broker %s (%s) could not be asked about the %s filter on %s: %s",
                group,
                broker_name,
                addr,
                subscription.expression_type,
                subscription.topic,
                exc,
            )
            continue
        accepted += 1
    return accepted


async def check_subscriptions(
    api: BrokerApi,
    route_of: Callable[[str], TopicRouteData | None],
    subscriptions: Iterable[SubscriptionData],
    *,
    group: str,
    client_id: str,
) -> None:
    """:func:`check_filter` for each non-tag subscription, with its topic's route as ``route_of`` (a client
    instance's ``route``) knows it; raises :class:`FilterRefusedError` at the first refusal."""
    for subscription in subscriptions:
        if needs_check(subscription):
            route = route_of(subscription.topic or "")
            await check_filter(api, route, subscription, group=group, client_id=client_id)
