"""``rmq`` starts fast: every call is a fresh interpreter, so ``import cli.main`` (``rmq --help``, a usage
error) must not import the servers, the clients or the wire codec's header classes. The commands import
them when they run; these tests keep a module-level import from creeping back in.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

#: What no command needs before it runs (or what only a running command needs).
HEAVY = (
    "admin",
    "admin.admin",
    "producer",
    "producer.producer",
    "consumer",
    "consumer.push",
    "consumer.lite_pull",
    "broker",
    "broker.broker",
    "broker.store",
    "nameserver",
    "nameserver.route_table",
    "spark_connector",
    "pyspark",
    "pyarrow",
    "pydantic",  # typer 0.29 and later parse through it (pyproject.toml's bound says why not)
    "asyncio",
    "rich.table",
    "rich.progress",
    "rocketmq_wire.command",
    "rocketmq_wire.headers",
    "rocketmq_wire.bodies",
    "rocketmq_wire.message",
    "rocketmq_wire.transport.client",
    "cli.render",
    "cli.send_run",
    "cli.consume_run",
    "cli.quickstart_run",
    "cli.offsets_run",
    "cli.local_cluster",
)


def _loaded_after(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it leaves its result in ``result``. Returns that result and
    which of :data:`HEAVY` were imported by then."""
    script = f"""
import json, sys
result = None
{code}
print(json.dumps({{"result": result, "heavy": sorted(set(sys.modules) & set({list(HEAVY)!r}))}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    found["stderr"] = done.stderr
    return found


def test_importing_cli_main_imports_nothing_heavy() -> None:
    found = _loaded_after("import cli.main")
    assert found["heavy"] == []


@pytest.mark.parametrize(
    "args",
    [
        ["route", "T", "-n", "host:99999"],
        ["topic", "create", "bad topic!", "-n", "127.0.0.1:9876"],
        ["send", "T", "body", "--count", "0", "-n", "127.0.0.1:9876"],
        ["broker", "--role", "KING"],
        ["namesrv", "--port", "70000"],
    ],
)
def test_usage_errors_import_nothing_heavy(args: list[str]) -> None:
    found = _loaded_after(
        f"""
from cli.main import main
sys.argv = ["rmq", *{args!r}]
try:
    main()
except SystemExit as exc:
    result = exc.code
"""
    )
    assert found["result"] == 2, found["stderr"]
    assert str(found["stderr"]).startswith("error: ")
    assert found["heavy"] == []


def test_help_imports_nothing_heavy() -> None:
    found = _loaded_after(
        """
from cli.main import app
try:
    app(["--help"], prog_name="rmq")
except SystemExit as exc:
    result = exc.code
"""
    )
    assert found["result"] == 0
    assert found["heavy"] == ["rich.table"]  # typer lays its help out in rich tables; nothing else


def test_values_spelled_in_the_cli_agree_with_the_libraries() -> None:
    import admin
    import nameserver
    from broker.config import BrokerRole
    from cli import broker_cmd, namesrv_cmd, topic_cmd

    assert topic_cmd.DEFAULT_QUEUE_NUMS == admin.DEFAULT_QUEUE_NUMS
    assert topic_cmd.DEFAULT_PERM == admin.DEFAULT_PERM
    assert namesrv_cmd.DEFAULT_PORT == nameserver.DEFAULT_PORT
    assert [role.value for role in broker_cmd.Role] == [role.value for role in BrokerRole]


def test_library_errors_name_the_libraries_base_exceptions() -> None:
    import admin
    import consumer
    import producer
    from broker.store import StoreLockedError
    from cli.errors import LIBRARY_ERRORS, CliError, expected_errors
    from rocketmq_wire import CodecError
    from rocketmq_wire.transport import RemotingError

    named = [getattr(importlib.import_module(module), name) for module, name in LIBRARY_ERRORS]
    assert named == [
        admin.AdminError,
        producer.ProducerError,
        consumer.ConsumerError,
        RemotingError,
        CodecError,
        StoreLockedError,
    ]
    assert expected_errors() == (CliError, *named, OSError, TimeoutError)


@pytest.mark.parametrize("package", ["rocketmq_wire", "rocketmq_wire.transport", "producer", "consumer"])
def test_lazy_package_exports_every_name(package: str) -> None:
    found = _loaded_after(
        f"""
import {package} as pkg
names = list(pkg.__all__)
scope = {{}}
exec("from {package} import *", scope)
result = {{
    "star": sorted(n for n in scope if not n.startswith("__")),
    "all": sorted(names),
    "dir": all(n in dir(pkg) for n in names),
    "resolved": all(getattr(pkg, n) is not None for n in names),
}}
try:
    pkg.no_such_name
except AttributeError:
    result["missing_raises"] = True
"""
    )
    result = found["result"]
    assert isinstance(result, dict)
    assert result["star"] == result["all"]
    assert result["dir"] and result["resolved"] and result["missing_raises"]


def test_main_builds_only_the_command_called() -> None:
    """``rmq NAME ...`` gets a parser holding NAME alone; every registered name is found."""
    import typer

    from cli.main import app, only

    full = typer.main.get_command(app)
    assert isinstance(full, typer.core.TyperGroup)
    for name in full.commands:
        pruned = only(name)
        assert pruned is not None, name
        built = typer.main.get_command(pruned)
        assert isinstance(built, typer.core.TyperGroup)
        assert list(built.commands) == [name]
    assert only("--help") is None
    assert only("no-such-command") is None


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["--bogus"],
        ["route", "--help"],
        ["topic", "--help"],
        ["topic", "create", "--help"],
        ["topicRoute", "--help"],
        ["broker", "--help"],
        ["route", "T", "-n", "host:99999"],
        ["topic", "nosuch"],
        ["topicRout", "T"],
        ["send", "T", "x", "--count", "0"],
    ],
)
def test_what_main_builds_parses_as_the_whole_app(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from cli.main import app, app_for

    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    whole, built = CliRunner().invoke(app, args), CliRunner().invoke(app_for(args), args)
    assert (built.exit_code, built.output) == (whole.exit_code, whole.output)
