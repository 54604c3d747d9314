"""Every request the Apache captures sent to the NameServer, replayed against ours, answers compared.

Each capture is replayed into a fresh NameServer emulating the Apache version that was captured, state
changes included (REGISTER_BROKER, PUT_KV_CONFIG, DELETE_TOPIC_IN_NAMESRV, UNREGISTER_BROKER), and every
answer is compared with the captured one: response code, remark, every header field with its value, and
the body byte for byte (route, cluster, topic-list and KV bodies).

The order of the replay needs care. A capture lists the frames of one TCP connection and direction as one
block stamped with the block's first time, so the broker's own connection -- registrations for a whole
run -- appears as a single block at the start, as if every later registration had happened first. The
broker's requests are therefore put back in time by their opaque: Java numbers every command a JVM creates
from one counter, and the broker's requests *to clients* (NOTIFY_CONSUMER_IDS_CHANGED, on client
connections whose blocks are placed in time) number from the same counter, so they pin that counter to
positions in the capture; each registration goes where its opaque falls between those pins.

That still cannot settle races the capture does not record, e.g. whether a consumer's route query for its
retry topic reached the NameServer before or after the registration the consumer's own heartbeat caused
moments earlier. So an answer that differs is re-asked of every state the replay passed through: if one of
them gives Apache's answer exactly, the difference is one of ordering and is reported as such; otherwise it
is a real difference, and there must be none.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Hashable

import pytest

from nameserver import NameServer
from nameserver.config import NamesrvConfig
from nameserver.kvconfig import KVConfigManager
from nameserver.processor import NamesrvProcessor
from nameserver.profile import APACHE_4_9_8, APACHE_5_3_3, ApacheProfile
from nameserver.route_table import RouteInfoManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingClient
from tests.golden import CAPTURES, GoldenFrame, load_golden, request_of

STATE_CHANGING = frozenset(
    {
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
    }
)


def profile_of(capture: str) -> ApacheProfile:
    return APACHE_4_9_8 if capture.startswith("java498") else APACHE_5_3_3


def new_processor(profile: ApacheProfile) -> NamesrvProcessor:
    config = NamesrvConfig()
    return NamesrvProcessor(
        RouteInfoManager(config, profile), KVConfigManager(), lambda: 0.0, config, profile
    )


def replay_order(capture: str) -> list[GoldenFrame]:
    """The capture's requests to the NameServer, the broker's own moved to where their opaques place them."""
    frames = [f for f in load_golden() if f.capture == capture]
    position = {f.id: i for i, f in enumerate(frames)}
    requests = [f for f in frames if f.server == "namesrv" and f.direction == "to-namesrv"]
    broker_connections = {
        f.connection
        for f in requests
        if f.code in (RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER)
    }
    pins = sorted(
        (f.opaque, position[f.id]) for f in frames if f.direction == "from-broker" and f.kind != "response"
    )
    placed: list[tuple[float, int, GoldenFrame]] = []
    for connection in broker_connections:
        own = [f for f in requests if f.connection == connection]
        points = [(own[0].opaque, position[own[0].id])] + [p for p in pins if p[0] > own[0].opaque]
        slope = (points[-1][1] - points[0][1]) / max(1, points[-1][0] - points[0][0])
        for frame in own:
            placed.append((_interpolate(frame.opaque, points, slope), position[frame.id], frame))
    for frame in requests:
        if frame.connection not in broker_connections:
            placed.append((float(position[frame.id]), position[frame.id], frame))
    placed.sort(key=lambda item: (item[0], item[1]))
    return [frame for _, _, frame in placed]


def _interpolate(opaque: int, points: list[tuple[int, int]], slope: float) -> float:
    for (low_op, low_pos), (high_op, high_pos) in itertools.pairwise(points):
        if low_op <= opaque <= high_op:
            return low_pos + (opaque - low_op) / max(1, high_op - low_op) * (high_pos - low_pos)
    return points[-1][1] + (opaque - points[-1][0]) * slope


def same_answer(ours: RemotingCommand, theirs: RemotingCommand) -> bool:
    return (
        ours.code == theirs.code
        and ours.remark == theirs.remark
        and ours.fields() == theirs.fields()
        and ours.body == theirs.body
    )


@dataclasses.dataclass
class Outcome:
    frame: GoldenFrame
    request: RemotingCommand
    ours: RemotingCommand
    theirs: RemotingCommand
    #: "match", "ordering" (another state of the replay gives Apache's answer) or "differs".
    verdict: str
    #: The state changes after which ours equals Apache's answer.
    states_matching: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        topic = self.request.fields().get("topic", "")
        return (
            f"{self.frame.id} code {self.frame.code} {topic}: ours {self.ours.code} {len(self.ours.body)}B, "
            f"Apache {self.theirs.code} {len(self.theirs.body)}B; ours gives Apache's answer right after "
            f"{self.states_matching[0]}"
        )


def golden_answers(capture: str) -> dict[tuple[int, int], GoldenFrame]:
    """The captured answers by (connection, opaque), each checked to answer a request of ours."""
    answers = {}
    for frame in load_golden():
        if frame.capture == capture and frame.direction == "from-namesrv":
            request = request_of(frame)
            assert request is not None and request.direction == "to-namesrv", frame.id
            answers[(frame.connection, frame.opaque)] = frame
    return answers


def replay(capture: str) -> list[Outcome]:
    profile = profile_of(capture)
    processor = new_processor(profile)
    answers = golden_answers(capture)
    states = [copy.deepcopy(processor)]
    labels = ["the start"]
    outcomes: list[Outcome] = []
    for frame in replay_order(capture):
        request = RemotingCommand.decode(frame.frame)
        ours = RemotingCommand.decode(processor.process(request, _channel(frame)).encode())
        if frame.code in STATE_CHANGING:
            states.append(copy.deepcopy(processor))
            labels.append(f"{RequestCode(frame.code).name} {frame.id} (opaque {frame.opaque})")
        if frame.kind == "oneway":
            continue
        theirs = RemotingCommand.decode(answers[(frame.connection, frame.opaque)].frame)
        outcomes.append(Outcome(frame, request, ours, theirs, "match"))
    # A differing answer is asked again of every state the replay went through, earlier or later.
    for outcome in outcomes:
        if same_answer(outcome.ours, outcome.theirs):
            continue
        outcome.states_matching = [
            labels[i]
            for i, state in enumerate(states)
            if same_answer(
                copy.deepcopy(state).process(outcome.request, _channel(outcome.frame)), outcome.theirs
            )
        ]
        outcome.verdict = "ordering" if outcome.states_matching else "differs"
    return outcomes


def _channel(frame: GoldenFrame) -> Hashable:
    return (frame.capture, frame.connection)


def report(capture: str, outcomes: list[Outcome]) -> str:
    counts = {v: sum(o.verdict == v for o in outcomes) for v in ("match", "ordering", "differs")}
    bodies = sum(1 for o in outcomes if o.verdict == "match" and o.theirs.body)
    lines = [
        f"{capture}: {len(outcomes)} answers compared, {counts['match']} identical "
        f"({bodies} of them with a body, byte-equal), {counts['ordering']} differ only by ordering, "
        f"{counts['differs']} differ"
    ]
    lines += [f"  {o.verdict}: {o.describe()}" for o in outcomes if o.verdict != "match"]
    return "\n".join(lines)


@pytest.mark.parametrize("capture", CAPTURES)
def test_replayed_requests_get_apaches_answers(capture: str) -> None:
    outcomes = replay(capture)
    text = report(capture, outcomes)
    print(text)
    expected = sum(
        1
        for f in load_golden()
        if f.capture == capture and f.direction == "to-namesrv" and f.kind == "request"
    )
    assert len(outcomes) == expected, text
    assert not [o for o in outcomes if o.verdict == "differs"], text
    ordering = [o for o in outcomes if o.verdict == "ordering"]
    # The races the capture cannot order: a consumer asking for its retry topic's route around the
    # registration that created it, and a broker registering around mqadmin's PUT_KV_CONFIG.
    for outcome in ordering:
        retry_route = outcome.frame.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and str(
            outcome.request.fields().get("topic", "")
        ).startswith("%RETRY%")
        assert retry_route or outcome.frame.code == RequestCode.REGISTER_BROKER, text
    assert len(ordering) <= 3, text
    codes = {o.theirs.code for o in outcomes if o.verdict == "match"}
    assert {ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST} <= codes, text


def test_every_kind_of_namesrv_request_in_the_captures_is_compared() -> None:
    compared = {o.frame.code for capture in CAPTURES for o in replay(capture) if o.verdict == "match"}
    assert compared == {
        RequestCode.PUT_KV_CONFIG,
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
    }


def test_replay_order_keeps_each_connections_own_order() -> None:
    for capture in CAPTURES:
        order = replay_order(capture)
        by_connection: dict[int, list[int]] = {}
        for frame in order:
            by_connection.setdefault(frame.connection, []).append(load_golden().index(frame))
        assert all(indexes == sorted(indexes) for indexes in by_connection.values()), capture
        # The broker's shutdown comes after every client request in the captures that have one.
        unregister = [i for i, f in enumerate(order) if f.code == RequestCode.UNREGISTER_BROKER]
        if unregister:
            last_route = max(i for i, f in enumerate(order) if f.code == RequestCode.GET_ROUTEINFO_BY_TOPIC)
            assert unregister[0] > last_route, capture


async def test_replay_over_loopback_gives_the_in_process_answers() -> None:
    """The same replay through a real server, one client connection per captured connection."""
    capture = "java533-json"
    expected = {o.frame.id: o.ours for o in replay(capture)}
    clients: dict[int, RemotingClient] = {}
    async with NameServer("127.0.0.1", 0, profile=profile_of(capture), clock=lambda: 0.0) as server:
        try:
            for frame in replay_order(capture):
                client = clients.setdefault(frame.connection, RemotingClient())
                request = RemotingCommand.decode(frame.frame)
                # Oneway registrations are sent as requests so the next request waits for their effect.
                request.flag = 0
                ours = await client.invoke(server.address, request, 3000)
                if frame.kind == "oneway":
                    continue
                want = expected[frame.id]
                assert (ours.code, ours.remark, ours.fields(), ours.body) == (
                    want.code,
                    want.remark,
                    want.fields(),
                    want.body,
                ), frame.id
        finally:
            for client in clients.values():
                await client.close()
