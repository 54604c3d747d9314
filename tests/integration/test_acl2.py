"""ACL 2.0 against Apache's broker: 5.3's ``authenticationEnabled`` and ``authorizationEnabled`` on, users and
ACLs in the broker's local metadata.

The project's Admin, signed as the broker's initial (super) user, creates a normal user and an ACL granting
``Pub``/``Sub`` on topic A and ``Sub`` on the consumer groups. Then every case is tried by the project's
producer, pull consumer and Admin, and by Apache's Java client (the Java peer's producer and lite pull
consumer, and mqadmin for the admin requests, signed through its ``tools.yml``): an unsigned request, a wrong
secret, an unknown user, the allowed topic, a forbidden topic, a forbidden group, and an admin request by the
normal user. Both clients must pass where the other passes and meet the same refusals -- the same response
code and the same remark, which 5.3.3 words after what it refused -- and nothing refused may be stored. ``rmq
user``/``rmq acl`` read back what was created (and what mqadmin created), and drive every request themselves.

The Java processes all start in the background as soon as the cluster is set up, a few at a time, while the
project's side runs; one broker serves the whole module.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from admin import AclInfo, Admin, RequestRefusedError, UserInfo
from cli.main import app, app_for
from consumer import PullConsumer
from producer import BrokerError, Message, Producer, SendFailedError
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.transport import RemotingClient
from tests.integration.apache import jvm
from tests.integration.apache import servers as apache_servers
from tests.integration.apache.releases import ApacheRelease, releases
from tests.integration.clusters.fixture import skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, ProviderUnavailable, unique_name
from tests.integration.clusters.probe import wait_for_broker_sync
from tests.integration.clusters.providers import java_unavailable
from tests.integration.cpp_peer.runner import PeerProcess
from tests.integration.java_peer.build import JavaClient, compile_classes

pytestmark = pytest.mark.integration

#: ACL 2.0 (the AUTH_* requests, authentication and authorization pipelines) came with 5.3.0.
FIRST_ACL2_RELEASE = (5, 3)
SUPER_USER, SUPER_PASSWORD = "rocketmq", "12345678"
INNER_USER, INNER_PASSWORD = "rmqInner", "innerSecret1"
ALICE, ALICE_PASSWORD = "alice", "alicePassword1"
GHOST = "ghost"
WRONG_PASSWORD = "notAlicesPassword"
#: What an Apache client connecting over loopback is seen as, in the broker's remarks.
SOURCE_IP = "127.0.0.1"
SEEDS = 3
REGISTER_S = 120.0
#: Java processes running at once: a 2-core machine runs several JVMs starting, but not a dozen.
JAVA_AT_ONCE = 5
#: How long a refused consumer (either client) runs: its start-up heartbeat and first rebalance are refused
#: within a second, and nothing changes after that.
REFUSED_CONSUMER_S = 6.0

AUTH_SETTINGS = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationProvider": (
        "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider"
    ),
    "authenticationMetadataProvider": (
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
    ),
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    "authorizationMetadataProvider": (
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"
    ),
    "initAuthenticationUser": json.dumps({"username": SUPER_USER, "password": SUPER_PASSWORD}),
    # The broker's own clients (to itself, to other brokers) sign with these; they become a super user too.
    "innerClientAuthenticationCredentials": json.dumps(
        {"accessKey": INNER_USER, "secretKey": INNER_PASSWORD}
    ),
}

Keys = tuple[str, str] | None


@dataclasses.dataclass(frozen=True)
class Case:
    """One of the situations both clients are put in: whose keys, what they ask for, what 5.3.3 says."""

    name: str
    keys: Keys
    #: The broker's remark for the refusal (always NO_PERMISSION), or None where the request is allowed.
    remark: str | None


def _denied(resource: str) -> str:
    return f"User:{ALICE} has no permission to access {resource} from {SOURCE_IP}, no matched policies."


ALICE_KEYS = (ALICE, ALICE_PASSWORD)
UNSIGNED = Case("unsigned request", None, "username cannot be null.")
WRONG_SECRET = Case("wrong secret", (ALICE, WRONG_PASSWORD), "check signature failed.")
UNKNOWN_USER = Case("unknown user", (GHOST, "whatever1"), f"User:{GHOST} is not found.")
AUTHENTICATION_CASES = (UNSIGNED, WRONG_SECRET, UNKNOWN_USER)
#: Creating a user needs the Cluster resource (or a super user): the normal user has neither.
ADMIN_ONLY = Case("admin-only request by a normal user", ALICE_KEYS, _denied(f"Cluster:{CLUSTER_NAME}"))
ADMIN_CASES = (*AUTHENTICATION_CASES, ADMIN_ONLY)


@dataclasses.dataclass(frozen=True)
class Names:
    """This module's topics and groups (unique, so that a kept store is never mistaken for another run's)."""

    topic_a: str = dataclasses.field(default_factory=lambda: unique_name("Acl2A"))
    topic_b: str = dataclasses.field(default_factory=lambda: unique_name("Acl2B"))
    #: The groups the ACL grants, one per client so that their consumers never share a group.
    group_py: str = dataclasses.field(default_factory=lambda: unique_name("acl2-py"))
    group_java: str = dataclasses.field(default_factory=lambda: unique_name("acl2-java"))
    #: Groups the ACL does not name.
    forbidden_py: str = dataclasses.field(default_factory=lambda: unique_name("acl2-h-py"))
    forbidden_java: str = dataclasses.field(default_factory=lambda: unique_name("acl2-h-java"))
    unauthenticated_py: str = dataclasses.field(default_factory=lambda: unique_name("acl2-anon-py"))
    unauthenticated_java: str = dataclasses.field(default_factory=lambda: unique_name("acl2-anon-java"))


@dataclasses.dataclass(frozen=True)
class Acl2Cluster:
    release: ApacheRelease
    namesrv: str
    broker: str
    names: Names
    root: Path
    seeds: tuple[bytes, ...]


@dataclasses.dataclass(frozen=True)
class Seen:
    """What one client met in one case: whether the operation went through, and each distinct refusal
    (response code, the broker's remark) it was answered with. Consumers count only NO_PERMISSION answers:
    what else a refused consumer hears ("no consumer for this group") depends on timing, not on ACLs."""

    passed: bool
    refusals: frozenset[tuple[int, str]] = frozenset()

    def describe(self) -> str:
        if not self.refusals:
            return "passed" if self.passed else "failed without a refusal"
        return "; ".join(f"{code} {remark}" for code, remark in sorted(self.refusals))


def _release() -> ApacheRelease | None:
    """The first release of ``ROCKETMQ_VERSIONS`` (default 5.3.3, a full release) that has ACL 2.0."""
    for release in releases():
        numbers = tuple(int(part) for part in re.findall(r"\d+", release.version)[:2])
        if numbers >= FIRST_ACL2_RELEASE:
            return release
    return None


@pytest.fixture(scope="module")
def acl2(request: pytest.FixtureRequest) -> Iterator[Acl2Cluster]:
    """Apache's NameServer and Broker (ACL 2.0 on), the normal user, its ACL, the topics and a few messages
    (sent by the super user) to consume; the servers are stopped by pid at the end."""
    release = _release()
    if release is None:
        pytest.skip("ROCKETMQ_VERSIONS names no release with ACL 2.0 (5.3 or later)")
    reason = java_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    root = Path(tempfile.mkdtemp(prefix="rmq-acl2-"))
    launch = Launch(root / "work", root / "logs")
    failures_before = request.session.testsfailed
    try:
        try:
            namesrv = apache_servers.start_namesrv(launch, release).addr
            apache_servers.start_broker(launch, release, namesrv, extra=AUTH_SETTINGS)
        except ProviderUnavailable as exc:
            skip_or_fail(str(exc))
        data = wait_for_broker_sync(namesrv, CLUSTER_NAME, BROKER_NAME, REGISTER_S, launch.check_alive)
        broker = data.master_addr()
        assert broker is not None
        names = Names()
        seeds = tuple(f"seed {i}".encode() for i in range(SEEDS))
        asyncio.run(_set_up(namesrv, broker, names, seeds))
        yield Acl2Cluster(release, namesrv, broker, names, root, seeds)
    finally:
        leftovers = launch.stop(discard=True)
        if request.session.testsfailed > failures_before:
            print(f"ACL 2.0 test servers' logs kept in {root / 'logs'}")
            shutil.rmtree(root / "work", ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
        assert not leftovers, f"ACL 2.0 test servers left behind: {leftovers}"


async def _set_up(namesrv: str, broker: str, names: Names, seeds: Sequence[bytes]) -> None:
    """What the operator does first, signed as the initial user: topics, the normal user, its ACL."""
    async with Admin(namesrv, access_key=SUPER_USER, secret_key=SUPER_PASSWORD) as admin:
        for topic in (names.topic_a, names.topic_b):
            await admin.create_topic(topic, broker_addr=broker, read_queue_nums=2, write_queue_nums=2)
        await admin.create_user(broker, UserInfo(username=ALICE, password=ALICE_PASSWORD))
        subject = f"User:{ALICE}"
        await admin.create_acl(
            broker, AclInfo.of(subject, [f"Topic:{names.topic_a}"], ["Pub", "Sub"], None, "Allow")
        )
        groups = [f"Group:{names.group_py}", f"Group:{names.group_java}"]
        await admin.create_acl(broker, AclInfo.of(subject, groups, ["Sub"], None, "Allow"))
    async with Producer(
        unique_name("acl2-seeder"), namesrv, access_key=SUPER_USER, secret_key=SUPER_PASSWORD
    ) as seeder:
        for body in seeds:
            await seeder.send(Message(names.topic_a, body))


# -- Apache's Java client, in the background -----------------------------------------------------------------

#: ``CODE: 16  DESC: <remark>`` of an MQBrokerException, in a log or a stack trace (the producer's adds the
#: broker's address).
BROKER_EXCEPTION = re.compile(r"CODE: (-?\d+)\s+DESC: (.*?)(?: BROKER: \S+)?$", re.M)


def _refusals(text: str, only: int | None = None) -> frozenset[tuple[int, str]]:
    found = {(int(code), remark.strip()) for code, remark in BROKER_EXCEPTION.findall(text)}
    return frozenset((code, remark) for code, remark in found if only is None or code == only)


class Mqadmin:
    """Apache's mqadmin of the release as a process of its own, signed by a ``tools.yml`` of its own (none:
    unsigned), so that concurrent runs with different users never share one."""

    def __init__(self, release: ApacheRelease, folder: Path, keys: Keys, args: Sequence[str]) -> None:
        classes, classpath = compile_classes(release.tools_version)
        home = jvm.rocketmq_home(folder / "rocketmq-home")
        if keys is not None:
            (home / "conf" / "tools.yml").write_text(f"accessKey: {keys[0]}\nsecretKey: {keys[1]}\n", "utf-8")
        (folder / "user-home").mkdir(parents=True, exist_ok=True)
        self.argv = jvm.java_argv(
            "tool", [*classpath, classes], "rmqit.AdminExit", list(args), user_home=folder / "user-home"
        )
        self.env = jvm.java_env(home)
        self.process: subprocess.Popen[str] | None = None

    def run(self, timeout: float = 120.0) -> tuple[str, str]:
        """Runs to the end (killed past ``timeout``); its stdout and stderr."""
        self.process = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            start_new_session=True,
        )
        try:
            return self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.communicate()

    def kill(self) -> None:
        """SIGKILL to its process group (its own session: the pid is the group id) if it still runs."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


class JavaSide:
    """Every Java case, run a few at a time on a thread pool from the moment the cluster is ready."""

    def __init__(self, cluster: Acl2Cluster) -> None:
        self.cluster = cluster
        self.client = JavaClient(cluster.release)
        self.folder = cluster.root / "java"
        self.mqadmins: list[Mqadmin] = []
        self.peers: list[PeerProcess] = []
        self._pool = concurrent.futures.ThreadPoolExecutor(JAVA_AT_ONCE, thread_name_prefix="acl2-java")
        self.results: dict[str, concurrent.futures.Future[Any]] = {}

    # - what each run is

    def _peer(
        self, label: str, command: str, args: Sequence[str], keys: Keys, stdin: str | None, timeout: float
    ) -> Any:
        log_dir = self.folder / label.replace(" ", "-")
        log_dir.mkdir(parents=True)
        signed = [] if keys is None else ["--access-key", keys[0], "--secret-key", keys[1]]
        peer = self.client.process(
            command,
            [*args, *signed],
            namesrv=self.cluster.namesrv,
            stdin=stdin,
            timeout=timeout,
            log_dir=log_dir,
        )
        self.peers.append(peer)
        with peer:
            result = peer.finish()
        log = log_dir / "logs" / "rocketmqlogs" / "peer.log"
        return result, log.read_text("utf-8", "replace") if log.exists() else ""

    def _send(self, label: str, keys: Keys, topics: Sequence[str]) -> Any:
        specs = [self.client.message(f"java {label} {i}", topic=topic) for i, topic in enumerate(topics)]
        args = ["--topic", topics[0], "--spec", "-", "--keep-going", "--group", unique_name("acl2-java-pg")]
        return self._peer(label, "send-sync", args, keys, json.dumps(specs), 60.0)

    def _consume(self, label: str, keys: Keys, group: str, topic: str, count: int, timeout: float) -> Any:
        """One pull consumer's run. A run that read nothing and logged no refusal either is run once more with
        a longer window: on a loaded machine the JVM's start-up can leave a short window without a single pull
        (CI once saw exactly that), and "nothing happened" is not an answer the broker gave."""
        args = ["--group", group, "--topic", topic, "--count", str(count), "--from", "first"]
        peer, log = self._peer(label, "pull-consume", args, keys, None, timeout)
        if peer.messages() or _refusals(log, only=ResponseCode.NO_PERMISSION):
            return peer, log
        return self._peer(label + "-again", "pull-consume", args, keys, None, timeout * 3)

    def _mqadmin(self, label: str, keys: Keys, args: Sequence[str]) -> tuple[str, str]:
        run = Mqadmin(self.cluster.release, self.folder / label.replace(" ", "-"), keys, args)
        self.mqadmins.append(run)
        return run.run()

    def _submit(self, label: str, work: Callable[[], Any]) -> None:
        self.results[label] = self._pool.submit(work)

    def start(self) -> None:
        """Submit every run, the longest first (refused consumers run for their whole timeout)."""
        names, broker = self.cluster.names, self.cluster.broker
        refused_wait = REFUSED_CONSUMER_S
        for case in AUTHENTICATION_CASES:
            self._submit(
                f"consume {case.name}",
                partial(
                    self._consume,
                    f"consume-{case.name}",
                    case.keys,
                    names.unauthenticated_java,
                    names.topic_a,
                    1,
                    refused_wait,
                ),
            )
        self._submit(
            "consume forbidden group",
            partial(
                self._consume,
                "consume-forbidden-group",
                ALICE_KEYS,
                names.forbidden_java,
                names.topic_a,
                1,
                refused_wait,
            ),
        )
        self._submit(
            "consume forbidden topic",
            partial(
                self._consume,
                "consume-forbidden-topic",
                ALICE_KEYS,
                names.group_java,
                names.topic_b,
                1,
                refused_wait,
            ),
        )
        self._submit(
            "consume allowed",
            # Count 0: read until the queues go quiet. TopicA gets both clients' allowed sends meanwhile, so
            # "stop after SEEDS messages" could stop before every seed came.
            partial(self._consume, "consume-allowed", ALICE_KEYS, names.group_java, names.topic_a, 0, 60.0),
        )
        for case in AUTHENTICATION_CASES:
            self._submit(
                f"send {case.name}", partial(self._send, f"send-{case.name}", case.keys, [names.topic_a])
            )
        self._submit(
            "send allowed+forbidden",
            partial(self._send, "send-alice", ALICE_KEYS, [names.topic_a, names.topic_b]),
        )
        for case in ADMIN_CASES:
            create = ["createUser", "-b", broker, "-u", _mallory("java", case.name), "-p", "mallory1"]
            self._submit(
                f"admin {case.name}", partial(self._mqadmin, f"admin-{case.name}", case.keys, create)
            )
        super_keys = (SUPER_USER, SUPER_PASSWORD)
        get_acl = ["getAcl", "-b", broker, "-s", f"User:{ALICE}"]
        self._submit("getAcl", partial(self._mqadmin, "getAcl", super_keys, get_acl))
        create_carol = ["createUser", "-b", broker, "-u", "carol", "-p", "carolPw1"]
        self._submit("createUser carol", partial(self._mqadmin, "createUser", super_keys, create_carol))

    # - what each run saw

    def result(self, label: str) -> Any:
        return self.results[label].result(timeout=300)

    def send_seen(self, label: str, index: int = 0) -> Seen:
        peer, _ = self.result(label)
        sent = [e for e in peer.of("send_result") if e.get("index") == index]
        if sent:
            return Seen(passed=sent[0]["status"] == "SEND_OK")
        errors = [e for e in peer.errors if e.get("index") == index]
        assert errors, f"{label}: no result for message {index}: {peer.describe()}"
        code = int(errors[0]["response_code"])
        remarks = {remark for _, remark in _refusals(str(errors[0].get("cause", "")))}
        return Seen(passed=False, refusals=frozenset((code, remark) for remark in remarks))

    def consume_seen(self, label: str, seeds: Sequence[bytes]) -> Seen:
        peer, log = self.result(label)
        bodies = {m.body for m in peer.messages()}
        return Seen(passed=set(seeds) <= bodies, refusals=_refusals(log, only=ResponseCode.NO_PERMISSION))

    def admin_seen(self, label: str) -> Seen:
        out, err = self.result(label)
        if "success" in out:
            return Seen(passed=True)
        found = _refusals(err)
        assert found, f"mqadmin {label} neither succeeded nor reported a refusal:\n{out}\n{err[-3000:]}"
        return Seen(passed=False, refusals=found)

    def stop(self) -> list[int]:
        """Cancel what has not started, kill what still runs (again once the pool's threads are done, in case
        one started a process meanwhile); the pids of peers still alive after that."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        for run in self.mqadmins:
            run.kill()
        self.client.close()
        self._pool.shutdown(wait=True)
        for run in self.mqadmins:
            run.kill()
        return self.client.close()


def _mallory(side: str, case: str) -> str:
    """A user each refused admin request tries to create, never to be found afterwards."""
    return "mallory-" + side + "-" + case.replace(" ", "-")


@pytest.fixture(scope="module")
def java(
    acl2: Acl2Cluster, java_client_unavailable: Callable[[ApacheRelease], str | None]
) -> Iterator[JavaSide]:
    reason = java_client_unavailable(acl2.release)
    if reason is not None:
        skip_or_fail(reason)
    side = JavaSide(acl2)
    side.start()
    try:
        yield side
    finally:
        survivors = side.stop()
        assert not survivors, f"Java client processes left behind: {survivors}"


# -- the project's clients -----------------------------------------------------------------------------------


class Answers:
    """Every answer the project's clients get from the broker while installed: what its consumers hear is
    logged, not raised (as with Java's), so it is taken from the transport itself."""

    def __init__(self, broker: str) -> None:
        self.broker = broker
        self.seen: list[tuple[int, str]] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[Answers]:
        original = RemotingClient.invoke
        answers = self

        async def invoke(
            client: RemotingClient, addr: str, cmd: RemotingCommand, timeout_ms: float
        ) -> RemotingCommand:
            response = await original(client, addr, cmd, timeout_ms)
            if addr == answers.broker:
                answers.seen.append((response.code, response.remark or ""))
            return response

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(RemotingClient, "invoke", invoke)
            yield self

    def take(self) -> frozenset[tuple[int, str]]:
        """The distinct NO_PERMISSION answers since the last call."""
        taken = frozenset((code, remark) for code, remark in self.seen if code == ResponseCode.NO_PERMISSION)
        self.seen.clear()
        return taken


def _keys(keys: Keys) -> tuple[str | None, str | None]:
    """(access key, secret key) for the project's clients; (None, None) leaves a request unsigned."""
    return (None, None) if keys is None else keys


async def _project_send(namesrv: str, keys: Keys, topic: str, body: bytes) -> Seen:
    access_key, secret_key = _keys(keys)
    group = unique_name("acl2-py-pg")
    async with Producer(group, namesrv, access_key=access_key, secret_key=secret_key) as producer:
        try:
            await producer.send(Message(topic, body))
        except BrokerError as exc:  # a refusal Java does not resend
            return Seen(passed=False, refusals=frozenset({(exc.code, exc.remark or "")}))
        except SendFailedError as exc:  # resent, then given up: the last answer is the cause
            cause = exc.__cause__
            assert isinstance(cause, BrokerError), f"a send failed without a broker's answer: {exc!r}"
            return Seen(passed=False, refusals=frozenset({(cause.code, cause.remark or "")}))
    return Seen(passed=True)


async def _project_consume(
    namesrv: str,
    keys: Keys,
    group: str,
    topic: str,
    seeds: Sequence[bytes],
    answers: Answers,
    patience_s: float,
) -> Seen:
    access_key, secret_key = _keys(keys)
    consumer = PullConsumer(
        group, namesrv, consume_from="CONSUME_FROM_FIRST_OFFSET", access_key=access_key, secret_key=secret_key
    )
    consumer.subscribe(topic)
    bodies: set[bytes] = set()
    deadline = time.monotonic() + patience_s
    async with consumer:
        while time.monotonic() < deadline and not set(seeds) <= bodies:
            bodies.update(m.body for m in await consumer.poll(0.5))
    return Seen(passed=set(seeds) <= bodies, refusals=answers.take())


async def _project_admin(namesrv: str, broker: str, keys: Keys, username: str) -> Seen:
    access_key, secret_key = _keys(keys)
    async with Admin(namesrv, access_key=access_key, secret_key=secret_key) as admin:
        try:
            await admin.create_user(broker, UserInfo(username=username, password="mallory1"))
        except RequestRefusedError as exc:
            return Seen(passed=False, refusals=frozenset({(exc.code, exc.remark or "")}))
    return Seen(passed=True)


@dataclasses.dataclass
class Matrix:
    """Case x role -> what each client saw, and what 5.3.3 is expected to answer."""

    rows: list[tuple[str, str, Seen, Seen, Seen]] = dataclasses.field(default_factory=list)

    def add(self, role: str, case: str, expected: Seen, project: Seen, java: Seen) -> None:
        self.rows.append((role, case, expected, project, java))

    def table(self) -> str:
        lines = ["| role | case | project's client | Apache's Java client |", "|---|---|---|---|"]
        lines += [f"| {r} | {c} | {p.describe()} | {j.describe()} |" for r, c, _, p, j in self.rows]
        return "\n".join(lines)


def _expected(remark: str | None) -> Seen:
    if remark is None:
        return Seen(passed=True)
    return Seen(passed=False, refusals=frozenset({(ResponseCode.NO_PERMISSION, remark)}))


async def _project_side(
    namesrv: str, broker: str, names: Names, seeds: Sequence[bytes], refused_patience_s: float = 3.0
) -> dict[tuple[str, str], Seen]:
    """Every case by the project's producer, pull consumer and Admin: (role, case) -> what it saw."""
    project: dict[tuple[str, str], Seen] = {}
    for case in AUTHENTICATION_CASES:
        project["producer", case.name] = await _project_send(namesrv, case.keys, names.topic_a, b"refused")
    project["producer", "allowed topic"] = await _project_send(
        namesrv, ALICE_KEYS, names.topic_a, b"py allowed"
    )
    project["producer", "forbidden topic"] = await _project_send(
        namesrv, ALICE_KEYS, names.topic_b, b"py refused"
    )
    answers = Answers(broker)
    refused = refused_patience_s
    with answers.installed():
        consume: list[tuple[str, Keys, str, str, float]] = [
            *(
                (c.name, c.keys, names.unauthenticated_py, names.topic_a, refused)
                for c in AUTHENTICATION_CASES
            ),
            ("allowed group and topic", ALICE_KEYS, names.group_py, names.topic_a, 30.0),
            ("forbidden group", ALICE_KEYS, names.forbidden_py, names.topic_a, refused),
            ("forbidden topic", ALICE_KEYS, names.group_py, names.topic_b, refused),
        ]
        for name, keys, group, topic, patience in consume:
            project["consumer", name] = await _project_consume(
                namesrv, keys, group, topic, seeds, answers, patience
            )
    for case in ADMIN_CASES:
        project["admin", case.name] = await _project_admin(
            namesrv, broker, case.keys, _mallory("py", case.name)
        )
    return project


def _expectations(names: Names) -> dict[tuple[str, str], Seen]:
    """What 5.3.3 answers the project's clients in every case (the remarks name the project's groups)."""
    expected = {("producer", c.name): _expected(c.remark) for c in AUTHENTICATION_CASES}
    expected["producer", "allowed topic"] = _expected(None)
    expected["producer", "forbidden topic"] = _expected(_denied(f"Topic:{names.topic_b}"))
    expected |= {("consumer", c.name): _expected(c.remark) for c in AUTHENTICATION_CASES}
    expected["consumer", "allowed group and topic"] = _expected(None)
    expected["consumer", "forbidden group"] = _expected(_denied(f"Group:{names.forbidden_py}"))
    expected["consumer", "forbidden topic"] = _expected(_denied(f"Topic:{names.topic_b}"))
    expected |= {("admin", c.name): _expected(c.remark) for c in ADMIN_CASES}
    return expected


@pytest.fixture(scope="module")
def matrix(acl2: Acl2Cluster, java: JavaSide) -> Matrix:
    """The project's side of every case (while the Java runs go on), then the Java side as it finishes."""
    names = acl2.names
    project = asyncio.run(_project_side(acl2.namesrv, acl2.broker, names, acl2.seeds))

    found = Matrix()
    for case in AUTHENTICATION_CASES:
        found.add(
            "producer",
            case.name,
            _expected(case.remark),
            project["producer", case.name],
            java.send_seen(f"send {case.name}"),
        )
    found.add(
        "producer",
        "allowed topic",
        _expected(None),
        project["producer", "allowed topic"],
        java.send_seen("send allowed+forbidden", 0),
    )
    found.add(
        "producer",
        "forbidden topic",
        _expected(_denied(f"Topic:{names.topic_b}")),
        project["producer", "forbidden topic"],
        java.send_seen("send allowed+forbidden", 1),
    )
    for case in AUTHENTICATION_CASES:
        found.add(
            "consumer",
            case.name,
            _expected(case.remark),
            project["consumer", case.name],
            java.consume_seen(f"consume {case.name}", acl2.seeds),
        )
    found.add(
        "consumer",
        "allowed group and topic",
        _expected(None),
        project["consumer", "allowed group and topic"],
        java.consume_seen("consume allowed", acl2.seeds),
    )
    # Each client's forbidden group has its own name: the remarks name it.
    py_group = _expected(_denied(f"Group:{names.forbidden_py}"))
    java_group = java.consume_seen("consume forbidden group", acl2.seeds)
    java_group_as_py = Seen(
        java_group.passed,
        frozenset((c, r.replace(names.forbidden_java, names.forbidden_py)) for c, r in java_group.refusals),
    )
    found.add(
        "consumer", "forbidden group", py_group, project["consumer", "forbidden group"], java_group_as_py
    )
    found.add(
        "consumer",
        "forbidden topic",
        _expected(_denied(f"Topic:{names.topic_b}")),
        project["consumer", "forbidden topic"],
        java.consume_seen("consume forbidden topic", acl2.seeds),
    )
    for case in ADMIN_CASES:
        found.add(
            "admin",
            case.name,
            _expected(case.remark),
            project["admin", case.name],
            java.admin_seen(f"admin {case.name}"),
        )
    print("\nACL 2.0 cases against Apache " + acl2.release.version + ":\n" + found.table())
    return found


# -- the tests -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["producer", "consumer", "admin"])
def test_the_project_meets_the_same_answers_as_javas_client(matrix: Matrix, role: str) -> None:
    rows = [row for row in matrix.rows if row[0] == role]
    assert rows
    for _, case, expected, project, java in rows:
        assert java == expected, (
            f"{role}, {case}: Apache's Java client saw {java.describe()}, 5.3.3 says {expected.describe()}"
        )
        assert project == java, (
            f"{role}, {case}: the project saw {project.describe()}, Apache's Java client {java.describe()}"
        )


def test_nothing_refused_is_stored(acl2: Acl2Cluster, matrix: Matrix) -> None:
    names = acl2.names

    async def look() -> None:
        async with Admin(acl2.namesrv, access_key=SUPER_USER, secret_key=SUPER_PASSWORD) as admin:
            # Stored: the seeds, the project's allowed send and Java's; nothing of the refused sends.
            assert (await admin.topic_status(names.topic_a)).total_messages == SEEDS + 2
            assert (await admin.topic_status(names.topic_b)).total_messages == 0
            users = {u.username for u in await admin.list_users(acl2.broker)}
            assert not {u for u in users if u and u.startswith("mallory")}, users
            # A refused heartbeat creates no subscription group; an accepted one does.
            for group in (
                names.forbidden_py,
                names.forbidden_java,
                names.unauthenticated_py,
                names.unauthenticated_java,
            ):
                assert await admin.subscription_group_configs(group) == [], group
            for group in (names.group_py, names.group_java):
                assert [c.config.group_name for c in await admin.subscription_group_configs(group)] == [group]

    asyncio.run(look())


def _rmq(*args: str, keys: Keys = (SUPER_USER, SUPER_PASSWORD), namesrv: str) -> Any:
    """``rmq ARGS --json`` in this process (the command's parser and code, without an interpreter's start);
    the parser holds the command called alone, as ``rmq``'s own (building every command's takes a second)."""
    env = {
        "NAMESRV_ADDR": namesrv,
        "RMQ_ACCESS_KEY": keys[0] if keys else "",
        "RMQ_SECRET_KEY": keys[1] if keys else "",
    }
    result = CliRunner().invoke(app_for(args), [*args, "--json"], env=env)
    assert result.exit_code == 0, f"rmq {' '.join(args)}: {result.output}"
    return json.loads(result.stdout)


def test_rmq_reads_back_what_the_admin_and_mqadmin_created(acl2: Acl2Cluster, java: JavaSide) -> None:
    names, broker = acl2.names, acl2.broker
    users = _rmq("user", "list", "-b", broker, namesrv=acl2.namesrv)[broker]
    alice = {"username": ALICE, "password": ALICE_PASSWORD, "userType": "Normal", "userStatus": "enable"}
    assert alice in users
    assert {
        "username": SUPER_USER,
        "password": SUPER_PASSWORD,
        "userType": "Super",
        "userStatus": "enable",
    } in users
    acl = _rmq("acl", "get", "-c", CLUSTER_NAME, "-s", f"User:{ALICE}", namesrv=acl2.namesrv)
    assert acl == {
        broker: {
            "subject": f"User:{ALICE}",
            "policies": [
                {
                    "policyType": "Custom",
                    "entries": [
                        {
                            "resource": f"Topic:{names.topic_a}",
                            "actions": ["Pub", "Sub"],
                            "sourceIps": None,
                            "decision": "Allow",
                        },
                        {
                            "resource": f"Group:{names.group_py}",
                            "actions": ["Sub"],
                            "sourceIps": None,
                            "decision": "Allow",
                        },
                        {
                            "resource": f"Group:{names.group_java}",
                            "actions": ["Sub"],
                            "sourceIps": None,
                            "decision": "Allow",
                        },
                    ],
                }
            ],
        }
    }
    # Apache's mqadmin reads the same ACL the project's admin wrote ...
    shown, _ = java.result("getAcl")
    rows = re.findall(r"^User:\S+\s+Custom\s+(\S+)\s+\[([^\]]*)\]\s+\S+\s+(\S+)\s*$", shown, re.M)
    assert sorted(rows) == sorted(
        (e["resource"], ", ".join(e["actions"]), e["decision"]) for e in acl[broker]["policies"][0]["entries"]
    ), shown
    # ... and the project reads the user mqadmin created.
    assert "success" in java.result("createUser carol")[0]
    carol = _rmq("user", "get", "-b", broker, "-u", "carol", namesrv=acl2.namesrv)
    assert carol == {
        broker: {"username": "carol", "password": "carolPw1", "userType": "Normal", "userStatus": "enable"}
    }


def test_rmq_drives_every_user_and_acl_request(acl2: Acl2Cluster) -> None:
    """create, update, delete, get, list of users and ACLs with ``rmq``, over the cluster (``-c``)."""
    ns, broker, cluster = acl2.namesrv, acl2.broker, CLUSTER_NAME
    done = {"brokers": [broker], "success": True}
    assert _rmq("user", "create", "-c", cluster, "-u", "erin", "-p", "erinPw01", namesrv=ns) == done
    assert (
        _rmq("user", "update", "-c", cluster, "-u", "erin", "-t", "Super", "-s", "disable", namesrv=ns)
        == done
    )
    erin = {"username": "erin", "password": "erinPw01", "userType": "Super", "userStatus": "disable"}
    assert _rmq("user", "list", "-c", cluster, "-f", "eri", namesrv=ns) == {broker: [erin]}
    topic = f"Topic:{acl2.names.topic_a}"
    assert (
        _rmq(
            "acl",
            "create",
            "-c",
            cluster,
            "-s",
            "User:erin",
            "-r",
            f"{topic},Group:erin-*",
            "-a",
            "Sub",
            "-d",
            "Allow",
            namesrv=ns,
        )
        == done
    )
    assert (
        _rmq(
            "acl",
            "update",
            "-c",
            cluster,
            "-s",
            "User:erin",
            "-r",
            topic,
            "-a",
            "Pub",
            "-i",
            "10.0.0.0/8",
            "-d",
            "Deny",
            namesrv=ns,
        )
        == done
    )
    listed = _rmq("acl", "list", "-c", cluster, "-s", "erin", namesrv=ns)[broker]
    assert [
        (e["resource"], e["actions"], e["sourceIps"], e["decision"])
        for e in listed[0]["policies"][0]["entries"]
    ] == [
        (topic, ["Pub"], ["10.0.0.0/8"], "Deny"),
        ("Group:erin-*", ["Sub"], None, "Allow"),
    ]
    assert _rmq("acl", "delete", "-c", cluster, "-s", "User:erin", "-r", topic, namesrv=ns) == done
    after = _rmq("acl", "get", "-b", broker, "-s", "User:erin", namesrv=ns)[broker]
    assert [e["resource"] for e in after["policies"][0]["entries"]] == ["Group:erin-*"]
    assert _rmq("user", "delete", "-c", cluster, "-u", "erin", namesrv=ns) == done
    assert _rmq("user", "get", "-b", broker, "-u", "erin", namesrv=ns) == {broker: None}
    # The user's ACL went with it: asking for it now names a subject the broker does not know.
    gone = CliRunner().invoke(
        app,
        ["acl", "get", "-b", broker, "-s", "User:erin"],
        env={"NAMESRV_ADDR": ns, "RMQ_ACCESS_KEY": SUPER_USER, "RMQ_SECRET_KEY": SUPER_PASSWORD},
    )
    assert gone.exit_code == 1
    assert (
        gone.stderr.strip()
        == f"error: ACL lookup refused by {broker} (code 16 NO_PERMISSION): The subject is not exist."
    )


def test_rmq_as_a_normal_user_is_refused_in_one_line(acl2: Acl2Cluster) -> None:
    result = CliRunner().invoke(
        app,
        ["user", "list", "-b", acl2.broker],
        env={"NAMESRV_ADDR": acl2.namesrv, "RMQ_ACCESS_KEY": ALICE, "RMQ_SECRET_KEY": ALICE_PASSWORD},
    )
    assert result.exit_code == 1
    refusal = _denied(f"Cluster:{CLUSTER_NAME}")
    assert (
        result.stderr.strip()
        == f"error: user listing refused by {acl2.broker} (code 16 NO_PERMISSION): {refusal}"
    )
