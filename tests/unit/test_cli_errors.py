"""Wrong arguments and unreachable clusters end in one ``error:`` line and a non-zero exit, never a
traceback or a usage block."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from cli import params
from cli.common import target
from cli.consumer_cmds import parse_when
from cli.errors import CliError
from cli.main import app
from cli.send_cmd import build_message, parse_properties
from rocketmq_wire import SerializeType


def _dead_namesrv() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def _run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=stdin, env={"NAMESRV_ADDR": ""})


def _one_error_line(result: Result, exit_code: int) -> str:
    assert result.exit_code == exit_code, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "exit_code", "fragment"),
    [
        (["send"], 2, "Missing argument 'topic'"),
        (["send", "T", "body", "--count", "0"], 2, "--count"),
        (["topic", "create"], 2, "Missing argument 'topic'"),
        (["route", "T", "--no-such-option"], 2, "No such option"),
        (["route", "T"], 1, "no NameServer address: pass --namesrv/-n"),
        (
            ["route", "T", "-n", "ns:9876", "--access-key", "ak"],
            1,
            "--access-key and --secret-key go together",
        ),
        (["send", "T", "body", "-n", "ns:1", "--property", "novalue"], 2, "--property: takes name=value"),
        (["send", "T", "body", "-n", "ns:1", "--oneway", "--batch"], 1, "do not go together"),
        (["send", "T", "body", "-n", "ns:1", "--keys", "a", "--delay-level", "-1"], 2, "--delay-level"),
        (["send", "T", "-n", "ns:1"], 1, "the message body is empty"),
        (["message", "query", "T", "-n", "ns:1"], 1, "exactly one of --key and --unique-key"),
        (["message", "query", "T", "-n", "ns:1", "--key", "a", "-u", "b"], 1, "exactly one of --key"),
        (["topic", "create", "T", "-n", "ns:1", "--perm", "3"], 2, "'--perm' / '-p': must be 2"),
        (["topic", "create", "T", "-n", "ns:1", "-c", "C", "-b", "b:1"], 1, "either --cluster or --broker"),
        (
            ["reset-offset", "G", "T", "-n", "ns:1", "--to", "yesterday"],
            2,
            "cannot read 'yesterday' as a time",
        ),
        (["quickstart", "--log-level", "LOUD"], 2, "unknown log level"),
    ],
)
def test_argument_errors_are_one_line(args: list[str], exit_code: int, fragment: str) -> None:
    assert fragment in _one_error_line(_run(*args), exit_code)


def test_send_with_a_body_and_a_file_is_refused() -> None:
    line = _one_error_line(_run("send", "T", "body", "--file", __file__, "-n", "ns:1"), 1)
    assert "either as an argument or with --file" in line


async def test_an_unreachable_namesrv_is_one_line() -> None:
    dead = _dead_namesrv()
    for args in (["route", "T", "-n", dead, "--timeout-ms", "1000"], ["clusters", "-n", dead, "--json"]):
        result = await asyncio.to_thread(_run, *args)
        assert "no NameServer of" in _one_error_line(result, 1)


async def test_a_send_to_an_unreachable_namesrv_is_one_line() -> None:
    result = await asyncio.to_thread(_run, "send", "T", "body", "-n", _dead_namesrv())
    line = _one_error_line(result, 1)
    assert "NameServer" in line


def test_a_bare_group_shows_its_help() -> None:
    result = _run("topic")
    assert "Traceback" not in result.output
    assert "create" in result.output and "status" in result.output


def test_message_building_helpers() -> None:
    assert parse_properties(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    message = build_message("T", b"x", tags="t", keys=["k1 k2", "k3"], properties={"p": "v"}, delay_level=2)
    assert (message.keys, message.properties, message.delay_level) == (["k1", "k2", "k3"], {"p": "v"}, 2)
    with pytest.raises(CliError):
        build_message("T", b"x", tags=None, keys=[], properties={"UNIQ_KEY": "reserved"}, delay_level=0)


def test_reset_times() -> None:
    assert parse_when("now") == -1
    assert parse_when("1700000000000") == 1_700_000_000_000
    assert parse_when("2024-01-01T00:00:00+00:00") == 1_704_067_200_000


def test_an_unknown_serialization_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_SERIALIZE_TYPE", "protobuf")
    line = _one_error_line(_run("route", "T", "-n", _dead_namesrv()), 1)
    assert "ROCKETMQ_SERIALIZE_TYPE='PROTOBUF': choose JSON or ROCKETMQ" in line


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", SerializeType.JSON), ("json", SerializeType.JSON), (" RocketMQ ", SerializeType.ROCKETMQ)],
)
def test_serialization_comes_from_apaches_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: SerializeType
) -> None:
    monkeypatch.setenv("ROCKETMQ_SERIALIZE_TYPE", value)
    assert target("127.0.0.1:9876").serialize_type is expected
    assert target("127.0.0.1:9876").admin()._settings[-1] is expected


def _broken_admin(*args: object, **kwargs: object) -> None:
    raise RuntimeError("boom\nin two lines")


def test_an_unforeseen_failure_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RMQ_DEBUG", raising=False)
    monkeypatch.setattr("cli.cluster_cmds.with_admin", _broken_admin)
    line = _one_error_line(_run("route", "T", "-n", "ns:1"), 1)
    assert line == "error: internal error: RuntimeError: boom in two lines"


def test_rmq_debug_adds_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQ_DEBUG", "1")
    monkeypatch.setattr("cli.cluster_cmds.with_admin", _broken_admin)
    result = _run("route", "T", "-n", "ns:1")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "_broken_admin" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == "error: internal error: RuntimeError: boom in two lines"


def test_an_error_message_is_printed_literally() -> None:
    line = _one_error_line(_run("message", "get", "[/x]", "-n", _dead_namesrv()), 1)
    assert "[/x]" in line


@pytest.mark.parametrize(
    ("value", "expected"), [("ns:9876", "ns:9876"), (" a:1 ; [::1]:2 ", "a:1;[::1]:2"), ("  ", None)]
)
def test_namesrv_addresses_accepted(value: str, expected: str | None) -> None:
    assert params.namesrv_addresses(value) == expected


@pytest.mark.parametrize(
    ("value", "why"),
    [("h:99999", "outside 0..65535"), ("h:0", "port 0"), ("h", "host:port"), (";;", "no NameServer address")],
)
def test_namesrv_addresses_refused(value: str, why: str) -> None:
    with pytest.raises(typer.BadParameter, match=why):
        params.namesrv_addresses(value)


def test_store_dir_is_created_or_refused(tmp_path: Path) -> None:
    assert params.store_dir(str(tmp_path / "a" / "b")).is_dir()
    file = tmp_path / "file"
    file.write_text("x")
    refused = {" ": "must not be empty", str(file): "is a file", str(file / "sub"): "cannot create"}
    for value, why in refused.items():
        with pytest.raises(typer.BadParameter, match=why):
            params.store_dir(value)
