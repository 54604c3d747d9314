"""ACL 2.0 against the project's broker: the case table of ``test_acl2`` (same users, ACL, topics, seeds and
5.3.3's expected answers), driven by the project's clients and ``rmq``, plus two mqadmin runs.

``test_acl2`` runs the full matrix (the project's and Java's clients) against Apache's broker; this module
checks that the project's broker, with the same ACL 2.0 settings, gives the project's clients exactly the
answers Apache's broker gives them. It starts no Apache server, and only two short mqadmin JVMs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from admin import Admin
from cli.main import app
from rocketmq_wire import ResponseCode
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters import python_servers
from tests.integration.clusters.fixture import skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME
from tests.integration.clusters.probe import wait_for_broker_sync
from tests.integration.clusters.providers import java_unavailable
from tests.integration.test_acl2 import (
    ALICE,
    ALICE_KEYS,
    ALICE_PASSWORD,
    AUTH_SETTINGS,
    INNER_USER,
    REGISTER_S,
    SEEDS,
    SUPER_PASSWORD,
    SUPER_USER,
    Mqadmin,
    Names,
    _denied,
    _expectations,
    _project_side,
    _refusals,
    _release,
    _rmq,
    _set_up,
)

pytestmark = pytest.mark.integration


# -- the project's broker ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PythonAcl2:
    namesrv: str
    broker: str
    names: Names
    seeds: tuple[bytes, ...]
    root: Path


@pytest.fixture(scope="module")
def python_acl2(request: pytest.FixtureRequest) -> Iterator[PythonAcl2]:
    """The project's NameServer and Broker with the same ACL 2.0 settings, user, ACL, topics and seeds."""
    root = Path(tempfile.mkdtemp(prefix="rmq-acl2-py-"))
    launch = Launch(root / "work", root / "logs")
    failures_before = request.session.testsfailed
    try:
        namesrv = python_servers.start_namesrv(launch).addr
        python_servers.start_broker(launch, namesrv, extra=AUTH_SETTINGS)
        data = wait_for_broker_sync(namesrv, CLUSTER_NAME, BROKER_NAME, REGISTER_S, launch.check_alive)
        broker = data.master_addr()
        assert broker is not None
        names = Names()
        seeds = tuple(f"seed {i}".encode() for i in range(SEEDS))
        asyncio.run(_set_up(namesrv, broker, names, seeds))
        yield PythonAcl2(namesrv, broker, names, seeds, root)
    finally:
        leftovers = launch.stop(discard=True)
        if request.session.testsfailed > failures_before:
            print(f"ACL 2.0 python broker's logs kept in {root / 'logs'}")
            shutil.rmtree(root / "work", ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
        assert not leftovers, f"ACL 2.0 python servers left behind: {leftovers}"


def test_the_projects_broker_gives_apaches_answers(python_acl2: PythonAcl2) -> None:
    """Every case of the table, the project's clients against the project's broker: 5.3.3's outcomes."""
    c = python_acl2
    # A refused consumer is refused by its first heartbeat; one second is plenty on the project's broker.
    seen = asyncio.run(_project_side(c.namesrv, c.broker, c.names, c.seeds, refused_patience_s=1.0))
    expected = _expectations(c.names)
    wrong = {
        key: (seen[key].describe(), want.describe()) for key, want in expected.items() if seen[key] != want
    }
    assert not wrong, f"(role, case): (seen, 5.3.3 says): {wrong}"

    async def look() -> None:
        async with Admin(c.namesrv, access_key=SUPER_USER, secret_key=SUPER_PASSWORD) as admin:
            assert (await admin.topic_status(c.names.topic_a)).total_messages == SEEDS + 1
            assert (await admin.topic_status(c.names.topic_b)).total_messages == 0
            users = {u.username for u in await admin.list_users(c.broker)}
            assert users == {SUPER_USER, INNER_USER, ALICE}
            for group in (c.names.forbidden_py, c.names.unauthenticated_py):
                assert await admin.subscription_group_configs(group) == [], group

    asyncio.run(look())


def test_rmq_reads_and_refuses_on_the_projects_broker(python_acl2: PythonAcl2) -> None:
    c = python_acl2
    acl = _rmq("acl", "get", "-b", c.broker, "-s", f"User:{ALICE}", namesrv=c.namesrv)[c.broker]
    assert [(e["resource"], e["actions"], e["decision"]) for e in acl["policies"][0]["entries"]] == [
        (f"Topic:{c.names.topic_a}", ["Pub", "Sub"], "Allow"),
        (f"Group:{c.names.group_py}", ["Sub"], "Allow"),
        (f"Group:{c.names.group_java}", ["Sub"], "Allow"),
    ]
    result = CliRunner().invoke(
        app,
        ["user", "list", "-b", c.broker],
        env={"NAMESRV_ADDR": c.namesrv, "RMQ_ACCESS_KEY": ALICE, "RMQ_SECRET_KEY": ALICE_PASSWORD},
    )
    assert result.exit_code == 1
    refusal = _denied(f"Cluster:{CLUSTER_NAME}")
    assert (
        result.stderr.strip()
        == f"error: user listing refused by {c.broker} (code 16 NO_PERMISSION): {refusal}"
    )


def test_mqadmin_against_the_projects_broker(
    python_acl2: PythonAcl2, java_client_unavailable: Callable[[ApacheRelease], str | None]
) -> None:
    """Two mqadmin runs (a JVM each, run side by side): the super user reads the ACL the project's Admin
    wrote, and the normal user's createUser meets 5.3.3's refusal."""
    release = _release()
    if release is None:
        pytest.skip("ROCKETMQ_VERSIONS names no release with ACL 2.0 (5.3 or later): no mqadmin to run")
    reason = java_unavailable(release) or java_client_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    c = python_acl2
    folder = c.root / "mqadmin"
    runs = [
        Mqadmin(
            release,
            folder / "getAcl",
            (SUPER_USER, SUPER_PASSWORD),
            ["getAcl", "-b", c.broker, "-s", f"User:{ALICE}"],
        ),
        Mqadmin(
            release,
            folder / "create",
            ALICE_KEYS,
            ["createUser", "-b", c.broker, "-u", "mallory-mq", "-p", "mallory1"],
        ),
    ]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        try:
            (shown, _), (out, err) = pool.map(lambda run: run.run(60.0), runs)
        finally:
            for run in runs:
                run.kill()
    rows = re.findall(r"^User:\S+\s+Custom\s+(\S+)\s+\[([^\]]*)\]\s+\S+\s+(\S+)\s*$", shown, re.M)
    assert sorted(rows) == sorted(
        [
            (f"Topic:{c.names.topic_a}", "Pub, Sub", "Allow"),
            (f"Group:{c.names.group_py}", "Sub", "Allow"),
            (f"Group:{c.names.group_java}", "Sub", "Allow"),
        ]
    ), shown
    assert "success" not in out
    assert _refusals(err) == {(ResponseCode.NO_PERMISSION, _denied(f"Cluster:{CLUSTER_NAME}"))}, err[-3000:]
