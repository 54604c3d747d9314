"""How the lines of one ``rmqit.Peer steps`` run are shared out between its steps
(:func:`tests.integration.java_peer.build.split_steps`): each step's result must read as the result of a
process of its own, or the compatibility matrix's Java cells would check each other's lines."""

from __future__ import annotations

from typing import Any

from tests.integration.cpp_peer.runner import PeerResult
from tests.integration.java_peer.build import Step, split_steps

STEPS = [
    Step("send-sync", ["--topic", "T", "--spec", "[]"], "127.0.0.1:9876", 60.0),
    Step("route", ["--topic", "T"], "127.0.0.1:9876", 60.0),
    Step("push-consume", ["--group", "G", "--topic", "T", "--count", "1"], "127.0.0.1:9876", 60.0),
]


def run(events: list[dict[str, Any]], returncode: int = 0, killed: bool = False) -> PeerResult:
    return PeerResult(
        command="steps",
        argv=["--spec", "-"],
        pid=4242,
        returncode=returncode,
        events=events,
        noise=[],
        stderr="client log tail",
        native_log="",
        killed=killed,
        elapsed_s=3.0,
        name="java peer",
    )


def test_each_step_gets_its_own_lines_command_and_exit_code() -> None:
    whole = run(
        [
            {"event": "step", "index": 0, "command": "send-sync"},
            {"event": "send_result", "index": 0, "status": "SEND_OK"},
            {"event": "done", "command": "send-sync"},
            {"event": "step_end", "index": 0, "code": 0},
            {"event": "step", "index": 1, "command": "route"},
            {"event": "error", "error_type": "MQClientException"},
            {"event": "done", "command": "route"},
            {"event": "step_end", "index": 1, "code": 4},
            {"event": "step", "index": 2, "command": "push-consume"},
            {"event": "message", "msg_id": "M"},
            {"event": "done", "command": "push-consume"},
            {"event": "step_end", "index": 2, "code": 0},
        ],
        returncode=4,
    )
    sent, route, consumed = split_steps(whole, STEPS)
    assert [e["event"] for e in sent.events] == ["send_result", "done"] and sent.ok
    assert (route.returncode, [e["event"] for e in route.errors]) == (4, ["error"]) and not route.ok
    assert [e["event"] for e in consumed.events] == ["message", "done"] and consumed.ok
    assert [r.command for r in (sent, route, consumed)] == ["send-sync", "route", "push-consume"]
    assert route.argv == ["--namesrv", "127.0.0.1:9876", "--topic", "T", "--timeout", "60.0"]
    assert {r.pid for r in (sent, route, consumed)} == {4242}
    assert all(r.stderr == "client log tail" for r in (sent, route, consumed))


def test_steps_the_run_never_closed_end_as_the_run_did() -> None:
    """The watchdog ended the JVM during the second step: that step has the timeout line, the third has
    none of the first's lines, and neither reads as a success."""
    whole = run(
        [
            {"event": "step", "index": 0, "command": "send-sync"},
            {"event": "done", "command": "send-sync"},
            {"event": "step_end", "index": 0, "code": 0},
            {"event": "step", "index": 1, "command": "route"},
            {"event": "timeout", "after_s": 60.0},
        ],
        returncode=3,
    )
    sent, route, consumed = split_steps(whole, STEPS)
    assert sent.ok
    assert route.returncode == 3 and [e["event"] for e in route.errors] == ["timeout"] and not route.ok
    assert consumed.returncode == 3 and consumed.events == [] and not consumed.ok


def test_a_usage_error_of_the_run_itself_goes_to_every_step() -> None:
    whole = run([{"event": "error", "error_type": "UsageError", "message": "steps: bad"}], returncode=2)
    results = split_steps(whole, STEPS)
    assert all(r.returncode == 2 and r.errors[0]["error_type"] == "UsageError" for r in results)


def test_a_killed_run_leaves_its_open_steps_killed() -> None:
    whole = run([{"event": "step", "index": 0, "command": "send-sync"}], returncode=-9, killed=True)
    sent, route, _ = split_steps(whole, STEPS)
    assert sent.killed and route.killed and not sent.ok
