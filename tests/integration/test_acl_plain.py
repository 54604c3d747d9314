"""Apache 4.9.x's plain ACL, case by case and client by client: the project's broker answers as Apache's does.

Two brokers run side by side with ``aclEnable=true`` and the same ``plain_acl.yml``, a file of this module's
own, each behind its own NameServer (so every client sees exactly one broker):

* Apache's broker of the newest 4.9.x release the harness knows (4.9.7's servers). 4.9's
  ``PlainPermissionManager`` reads ``<home>/conf/plain_acl.yml``, home being the ``rocketmq.home.dir`` system
  property, else ``$ROCKETMQ_HOME`` (``rocketmq.acl.plain.file`` only names a path *under* that home), and
  its ``AclFileWatchService`` looks at the file's modification time every 5 s. The broker gets
  ``-Drocketmq.home.dir`` pointing at a home of this module, so the harness's shared home stays untouched.
* The project's broker, started with ``$ROCKETMQ_HOME`` pointing at a home of this module: with
  ``aclEnable=true`` and no ``--acl`` it reads ``$ROCKETMQ_HOME/conf/plain_acl.yml`` as Apache does.

Every case is tried by every client that can express it, against both brokers: the project's producer, pull
consumer and Admin; Apache's Java client (the Java peer's producer and lite pull consumer, and mqadmin for
the admin-only request); Apache's C++ client (the C++ peer's producer and pull consumer). A cell's answer is
whether the operation went through, and every ACL refusal met on the way: the response code and the
remark's AclException message without the Java frame Apache's remoting layer appends (4.9.7's line numbers
are not the 4.9.8 ones the project quotes) and without addresses. Both brokers must give every cell the same
answer, Apache's must be the one 4.9.x's code gives (so that a broker without ACL cannot pass), and nothing
refused may be stored or counted.

A global white address lets every request from it through, and every client here is on loopback, so that
case runs last: the file then gains ``127.0.0.1`` and the test waits for both brokers to reload it.

The Java runs (a JVM each) start in the background, a few at a time, as soon as the brokers are set up, while
the project's clients and the C++ peer run.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import pytest

from admin import Admin, AdminError, RequestRefusedError
from consumer import PullConsumer
from producer import BrokerError, Message, Producer, SendFailedError
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingClient
from tests.integration.apache import jvm
from tests.integration.apache import servers as apache_servers
from tests.integration.apache.cache import peers_required
from tests.integration.apache.mqadmin import EXITING_MAIN
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters import python_servers
from tests.integration.clusters.fixture import skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, ProviderUnavailable, unique_name
from tests.integration.clusters.probe import wait_for_broker_sync
from tests.integration.clusters.processes import wait_until
from tests.integration.clusters.providers import java_unavailable
from tests.integration.cpp_peer.runner import CppClient, PeerClientContention, PeerResult
from tests.integration.java_peer.build import JavaClient, classes_jar, compile_classes

pytestmark = pytest.mark.integration

log = logging.getLogger("tests.acl_plain")

Keys = tuple[str, str] | None

ADMIN_KEYS = ("aclAdminKey", "aclAdminSecret")
USER_KEYS = ("aclUserKey", "aclUserSecret")
GHOST_KEYS = ("aclGhostKey", "ghostSecret1")
#: An account whose ``whiteRemoteAddress`` no loopback client matches, and one every loopback client matches.
FAR_KEY, FAR_SECRET, FAR_WHITE = "aclFarKey", "aclFarSecret", "192.168.77.*"
NEAR_KEY, NEAR_SECRET, NEAR_WHITE = "aclNearKey", "aclNearSecret", "127.0.0.1"
WRONG_SECRET = "notTheSecret1"
#: In the global white list from the start: matches no client here, so it must let nothing through.
UNMATCHED_GLOBAL_WHITE = "10.255.255.*"
#: Added to the global white list for the last case.
LOOPBACK = "127.0.0.1"
#: The project's sends: Java's 3 s default was used up once (CI x18) by an Apache broker that, with the Java
#: and C++ peers running beside it on a loaded 2-core machine, accepted no connection for 3 s. The test is
#: about answers, not latency.
SEND_TIMEOUT_MS = 10_000

#: Apache's remoting layer names the exception class in the remark of every ACL refusal.
ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
#: ``, Class.method(File.java:line)``: the innermost frame ``RemotingHelper.exceptionSimpleDesc`` appends.
JAVA_FRAME = re.compile(r", [\w.$<>]+\([^()]*\)\s*$")
ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
#: ``CODE: 1  DESC: <remark>`` of a Java MQBrokerException / MQClientException, in a log or a stack trace:
#: the broker's remark, then maybe `` BROKER: addr`` and the FAQ line (on the same line in the client's log).
JAVA_REFUSAL = re.compile(
    r"CODE: (-?\d+)\s+DESC: (.*?)(?: BROKER: \S+)?(?:\s*For more information, please visit.*)?$", re.M
)
#: The C++ client (1.2.x) swallows a send's refusal (it resends, then says "No route info of this topic") and
#: a pull's (the pull comes back BROKER_TIMEOUT); each is in its log: ``processSendResponse`` logs the remark
#: and code, ``pullMessageSync`` the MQBrokerException (``msg: <remark>,error:<code>,in file <...>``).
CPP_SEND_REFUSAL = re.compile(r"processSendResponse error remark:(.*?), error code:(-?\d+)")
CPP_PULL_REFUSAL = re.compile(r"msg: (.*?),error:(-?\d+),in file")

QUEUES = 2
SEEDS = tuple(f"acl seed {i}".encode() for i in range(2))
REGISTER_S = 120.0
#: Java processes at once: a 2-core machine runs several JVMs starting, not a dozen.
JAVA_AT_ONCE = 4
CPP_AT_ONCE = 2
#: How long a refused consumer runs: its start-up heartbeat and first pulls are refused within a second or
#: two of the JVM's start, and nothing changes after that.
REFUSED_JAVA_CONSUMER_S = 6.0
REFUSED_PROJECT_CONSUMER_S = 3.0
ALLOWED_CONSUMER_S = 45.0
PEER_TIMEOUT_S = 45.0
MQADMIN_TIMEOUT_S = 90.0
#: Apache's watcher looks every 5 s; the project's broker as often.
RELOAD_TIMEOUT_S = 30.0

PY_PRODUCER = "project producer"
PY_CONSUMER = "project pull consumer"
PY_ADMIN = "project Admin"
JAVA_PRODUCER = "Java producer"
JAVA_CONSUMER = "Java lite pull consumer"
MQADMIN = "Java mqadmin"
CPP_PRODUCER = "C++ producer"
CPP_CONSUMER = "C++ pull consumer"
PRODUCERS = (PY_PRODUCER, JAVA_PRODUCER, CPP_PRODUCER)
CONSUMERS = (PY_CONSUMER, JAVA_CONSUMER, CPP_CONSUMER)
CPP_CLIENTS = (CPP_PRODUCER, CPP_CONSUMER)

#: The cells left out of the table, and why (printed under it).
LEFT_OUT = (
    "admin requests: only the project's Admin and mqadmin make them (the Java and C++ peers have no admin "
    "commands); mqadmin runs only the admin-only case, each of its runs being a JVM",
    "consumers in the send-only cases (forbidden topic, account white addresses, global white address) and "
    "producers in the forbidden-group case: the case is about the other role",
    f"the ACL admin code by a non-admin: only the project's Admin; 4.9.8's mqadmin has no command for "
    f"GET_BROKER_CLUSTER_ACL_CONFIG ({RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG}) and its ACL commands that "
    "exist rewrite the file",
)


# -- what a client met ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Answer:
    """What one client met in one case on one broker: whether the operation went through, and each distinct
    ACL refusal (response code, normalised message) it was answered with on the way."""

    passed: bool
    refusals: frozenset[tuple[int, str]] = frozenset()

    def describe(self) -> str:
        refused = "; ".join(f"{_code_name(code)} {message}" for code, message in sorted(self.refusals))
        if not refused:
            return "passed" if self.passed else "failed without a refusal"
        return f"passed after {refused}" if self.passed else refused


def _code_name(code: int) -> str:
    try:
        return f"{code} {ResponseCode(code).name}"
    except ValueError:
        return str(code)


@dataclasses.dataclass(frozen=True)
class Names:
    """This module's topics and groups, the same on both brokers (their names appear in the remarks)."""

    open: str = dataclasses.field(default_factory=lambda: unique_name("AclPlainOpen"))
    seeded: str = dataclasses.field(default_factory=lambda: unique_name("AclPlainSeeded"))
    forbidden: str = dataclasses.field(default_factory=lambda: unique_name("AclPlainForbidden"))
    #: The consumer groups the user account may use, one per client so that none shares offsets.
    group_py: str = dataclasses.field(default_factory=lambda: unique_name("aclp-py"))
    group_java: str = dataclasses.field(default_factory=lambda: unique_name("aclp-java"))
    group_cpp: str = dataclasses.field(default_factory=lambda: unique_name("aclp-cpp"))
    #: The group of the consumers refused before any permission is looked at.
    anonymous_group: str = dataclasses.field(default_factory=lambda: unique_name("aclp-anon"))
    #: A group the user account has no permission for.
    forbidden_group: str = dataclasses.field(default_factory=lambda: unique_name("aclp-forbidden"))
    made_prefix: str = dataclasses.field(default_factory=lambda: unique_name("AclPlainMade"))

    def made(self, client: str, case: str) -> str:
        """The topic an admin request of ``client`` in ``case`` tries to create."""
        return f"{self.made_prefix}-{_slug(client)}-{_slug(case)}"

    def placeholders(self) -> list[tuple[str, str]]:
        return [
            (self.open, "{open topic}"),
            (self.seeded, "{seeded topic}"),
            (self.forbidden, "{forbidden topic}"),
            (self.anonymous_group, "{anonymous group}"),
            (self.forbidden_group, "{forbidden group}"),
        ]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def normalise(remark: str, names: Names) -> str:
    """A refusal's remark without the Java frame and addresses, the module's names as placeholders."""
    text = JAVA_FRAME.sub("", remark.strip())
    text = text.replace(f"{ACL_EXCEPTION}: ", "AclException: ")
    text = ADDRESS.sub("<addr>", text)
    for name, placeholder in names.placeholders():
        text = text.replace(name, placeholder)
    return text.strip()


def refused(code: int, remark: str | None, names: Names) -> Answer:
    return Answer(passed=False, refusals=frozenset({(code, normalise(remark or "", names))}))


def _acl_refusals(found: Sequence[tuple[int, str]], names: Names) -> frozenset[tuple[int, str]]:
    return frozenset((code, normalise(remark, names)) for code, remark in found if ACL_EXCEPTION in remark)


def java_refusals(text: str, names: Names) -> frozenset[tuple[int, str]]:
    return _acl_refusals([(int(code), remark) for code, remark in JAVA_REFUSAL.findall(text)], names)


def cpp_refusals(native_log: str, names: Names) -> frozenset[tuple[int, str]]:
    found = [(int(code), remark) for remark, code in CPP_SEND_REFUSAL.findall(native_log)]
    found += [(int(code), remark) for remark, code in CPP_PULL_REFUSAL.findall(native_log)]
    return _acl_refusals(found, names)


# -- the cases -----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One row of the table: whose keys, which clients try it, what Apache 4.9.x answers."""

    name: str
    keys: Keys
    clients: tuple[str, ...]
    #: Apache 4.9.x's AclException message (as :func:`normalise` leaves it, without "AclException: "), or
    #: None where the request goes through.
    refusal: str | None
    #: The C++ client's own refusal where it differs: it always signs, with an empty access key when it was
    #: given none (``SessionCredentials`` defaults), so its unsigned requests name an unknown (empty) key.
    cpp_refusal: str | None = None

    def expected(self, client: str) -> Answer:
        refusal = self.cpp_refusal if client in CPP_CLIENTS and self.cpp_refusal else self.refusal
        if refusal is None:
            return Answer(passed=True)
        return Answer(
            passed=False, refusals=frozenset({(ResponseCode.SYSTEM_ERROR, f"AclException: {refusal}")})
        )


ALL_BUT_MQADMIN = (*PRODUCERS, *CONSUMERS, PY_ADMIN)
UNSIGNED = Case(
    "unsigned", None, ALL_BUT_MQADMIN, "No accessKey is configured", cpp_refusal="No acl config for"
)
WRONG = Case(
    "wrong secret",
    (USER_KEYS[0], WRONG_SECRET),
    ALL_BUT_MQADMIN,
    f"Check signature failed for accessKey={USER_KEYS[0]}",
)
UNKNOWN = Case("unknown access key", GHOST_KEYS, ALL_BUT_MQADMIN, f"No acl config for {GHOST_KEYS[0]}")
AUTHENTICATION = (UNSIGNED, WRONG, UNKNOWN)
FORBIDDEN_TOPIC = Case(
    "forbidden topic", USER_KEYS, PRODUCERS, "No default permission for topic:{forbidden topic}"
)
FORBIDDEN_GROUP = Case(
    "forbidden group", USER_KEYS, CONSUMERS, "No default permission for group:{forbidden group}"
)
#: The account's white address does not match, so the signature is checked (and the wrong one refused) ...
FAR = Case(
    "account white address not matching (wrong secret)",
    (FAR_KEY, WRONG_SECRET),
    PRODUCERS,
    f"Check signature failed for accessKey={FAR_KEY}",
)
#: ... where a matching one trusts the host outright: neither signature nor permissions are checked.
NEAR = Case("account white address matching (wrong secret)", (NEAR_KEY, WRONG_SECRET), PRODUCERS, None)
#: UPDATE_AND_CREATE_TOPIC is in Apache's own admin codes, which both brokers keep for admin accounts.
ADMIN_ONLY = Case(
    "admin-only request by a non-admin",
    USER_KEYS,
    (PY_ADMIN, MQADMIN),
    f"Need admin permission for request code={RequestCode.UPDATE_AND_CREATE_TOPIC}, "
    f"but accessKey={USER_KEYS[0]} is not",
)
#: The user account sends and consumes; the admin account (the Admin's cell) creates a topic.
ALLOWED = Case("allowed send and consume", USER_KEYS, (*PRODUCERS, *CONSUMERS, PY_ADMIN), None)
GLOBAL_WHITE = Case("global white address (unsigned)", None, (*PRODUCERS, PY_ADMIN), None)
CASES = (*AUTHENTICATION, FORBIDDEN_TOPIC, FORBIDDEN_GROUP, FAR, NEAR, ADMIN_ONLY, ALLOWED, GLOBAL_WHITE)

#: The one documented difference (README, "ACL"): the ACL administration codes that change the file or read
#: secrets need an admin account on the project's broker; Apache 4.9.x lets any signed account use them.
#: GET_BROKER_CLUSTER_ACL_CONFIG reads every account's secret and changes nothing on either broker.
BY_DESIGN = Case(
    "ACL admin code by a non-admin (differs by design)",
    USER_KEYS,
    (PY_ADMIN,),
    f"Need admin permission for request code={RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG}, "
    f"but accessKey={USER_KEYS[0]} is not",
)

#: Cases where the project's broker was found to answer differently from Apache's: case name -> the
#: difference (the case is then an expected failure until someone decides).
KNOWN_DIFFERENCES: dict[str, str] = {}


def acl_yaml(names: Names, *, white_listed: bool) -> str:
    """The ``plain_acl.yml`` both brokers enforce; ``white_listed`` adds the loopback address to the global
    white list (the last case)."""
    white = [UNMATCHED_GLOBAL_WHITE, *([LOOPBACK] if white_listed else [])]
    return "\n".join(
        [
            "globalWhiteRemoteAddresses:",
            *(f"  - '{address}'" for address in white),
            "accounts:",
            f"  - accessKey: {ADMIN_KEYS[0]}",
            f"    secretKey: {ADMIN_KEYS[1]}",
            "    admin: true",
            f"  - accessKey: {USER_KEYS[0]}",
            f"    secretKey: {USER_KEYS[1]}",
            "    admin: false",
            "    defaultTopicPerm: DENY",
            "    defaultGroupPerm: DENY",
            "    topicPerms:",
            f"      - {names.open}=PUB",
            f"      - {names.seeded}=SUB",
            "    groupPerms:",
            f"      - {names.group_py}=SUB",
            f"      - {names.group_java}=SUB",
            f"      - {names.group_cpp}=SUB",
            f"  - accessKey: {FAR_KEY}",
            f"    secretKey: {FAR_SECRET}",
            f"    whiteRemoteAddress: '{FAR_WHITE}'",
            "    defaultTopicPerm: PUB",
            "    defaultGroupPerm: SUB",
            f"  - accessKey: {NEAR_KEY}",
            f"    secretKey: {NEAR_SECRET}",
            f"    whiteRemoteAddress: '{NEAR_WHITE}'",
            "    defaultTopicPerm: DENY",
            "    defaultGroupPerm: DENY",
            "",
        ]
    )


def write_acl(path: Path, text: str) -> None:
    """Replace the file whole (a watcher must never read half of it); the temporary name ends neither in
    ``.yml`` nor ``.yaml``, so Apache's watcher never takes it for an ACL file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".new")
    staging.write_text(text, "utf-8")
    os.replace(staging, path)


# -- the brokers ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Side:
    """One broker of the pair, behind its own NameServer, and the home whose ``conf/plain_acl.yml`` it
    enforces."""

    label: str
    namesrv: str
    broker: str
    home: Path

    @property
    def acl_file(self) -> Path:
        return self.home / "conf" / "plain_acl.yml"


@dataclasses.dataclass(frozen=True)
class Pair:
    release: ApacheRelease
    apache: Side
    project: Side
    names: Names
    root: Path
    #: Each broker's ``msgPutTotalTodayNow`` once set up (the seeds stored), by side label.
    puts_before: dict[str, int]

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.apache, self.project


def _release() -> ApacheRelease | None:
    """The newest 4.x release among the harness's full releases (4.9.7's servers by default)."""
    fours = [r for r in full_releases() if r.major == 4]
    if not fours:
        return None
    return max(fours, key=lambda r: tuple(int(p) for p in re.findall(r"\d+", r.version)))


def _start_apache(launch: Launch, release: ApacheRelease, home: Path) -> Side:
    namesrv = apache_servers.start_namesrv(launch, release).addr
    apache_servers.start_broker(
        launch,
        release,
        namesrv,
        extra={"aclEnable": "true"},
        # 4.9's PlainPermissionManager takes its home from this property before ROCKETMQ_HOME.
        system_properties={"rocketmq.home.dir": str(home)},
    )
    data = wait_for_broker_sync(namesrv, CLUSTER_NAME, BROKER_NAME, REGISTER_S, launch.check_alive)
    broker = data.master_addr()
    assert broker is not None
    return Side(f"Apache {release.version}", namesrv, broker, home)


def _start_project(launch: Launch, home: Path) -> Side:
    namesrv = python_servers.start_namesrv(launch, "4.9.8").addr
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ROCKETMQ_HOME", str(home))  # the broker's process copies the environment at start
        python_servers.start_broker(launch, namesrv, extra={"aclEnable": "true"})
    data = wait_for_broker_sync(namesrv, CLUSTER_NAME, BROKER_NAME, 30.0, launch.check_alive)
    broker = data.master_addr()
    assert broker is not None
    return Side("project", namesrv, broker, home)


async def _set_up(side: Side, names: Names) -> int:
    """As the admin account: the topics, their routes, the seeds; returns ``msgPutTotalTodayNow`` after."""
    async with Admin(side.namesrv, access_key=ADMIN_KEYS[0], secret_key=ADMIN_KEYS[1]) as admin:
        for topic in (names.open, names.seeded, names.forbidden):
            await admin.create_topic(
                topic, broker_addr=side.broker, read_queue_nums=QUEUES, write_queue_nums=QUEUES
            )
        for topic in (names.open, names.seeded, names.forbidden):
            await _route_known(admin, topic)
    async with Producer(
        unique_name("aclp-seeder"), side.namesrv, access_key=ADMIN_KEYS[0], secret_key=ADMIN_KEYS[1]
    ) as seeder:
        for body in SEEDS:
            await seeder.send(Message(names.seeded, body))
    return await _puts(side)


async def _route_known(admin: Admin, topic: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await admin.topic_route(topic)
            return
        except AdminError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.2)


async def _puts(side: Side, timeout_s: float = 20.0) -> int:
    """The broker's ``msgPutTotalTodayNow``. A 4.9 broker fails the runtime-info request (with
    NoSuchElementException from its empty put-rate samples) until its stats thread has sampled once."""
    deadline = time.monotonic() + timeout_s
    async with Admin(side.namesrv, access_key=ADMIN_KEYS[0], secret_key=ADMIN_KEYS[1]) as admin:
        while True:
            try:
                stats = await admin.broker_runtime_stats(side.broker)
                return int(stats["msgPutTotalTodayNow"])
            except RequestRefusedError as exc:
                if "NoSuchElementException" not in (exc.remark or "") or time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.5)


@pytest.fixture(scope="module")
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Both brokers (ACL on, this module's file), their topics and seeds; every server stopped by pid at the
    end, the logs kept when a test failed."""
    release = _release()
    if release is None:
        pytest.skip("ROCKETMQ_VERSIONS names no full 4.x release (plain ACL is 4.9.x's)")
    reason = java_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    root = Path(tempfile.mkdtemp(prefix="rmq-acl-plain-"))
    apache_launch = Launch(root / "apache-work", root / "logs" / "apache")
    python_launch = Launch(root / "python-work", root / "logs" / "python")
    names = Names()
    apache_home = jvm.rocketmq_home(root / "apache-home")  # its logging configurations, and the ACL file
    python_home = root / "python-home"
    for home in (apache_home, python_home):
        write_acl(home / "conf" / "plain_acl.yml", acl_yaml(names, white_listed=False))
    failures_before = request.session.testsfailed
    try:
        try:
            with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aclp-apache") as pool:
                apache_started = pool.submit(_start_apache, apache_launch, release, apache_home)
                project = _start_project(python_launch, python_home)
                apache = apache_started.result()
        except ProviderUnavailable as exc:
            skip_or_fail(str(exc))

        async def set_up_both() -> list[int]:
            return list(await asyncio.gather(_set_up(apache, names), _set_up(project, names)))

        apache_puts, project_puts = asyncio.run(set_up_both())
        puts = {apache.label: apache_puts, project.label: project_puts}
        yield Pair(release, apache, project, names, root, puts)
    finally:
        leftovers = apache_launch.stop(discard=True) + python_launch.stop(discard=True)
        if request.session.testsfailed > failures_before:
            print(f"plain ACL test servers' logs kept in {root / 'logs'}")
            for work in ("apache-work", "python-work"):
                shutil.rmtree(root / work, ignore_errors=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
        assert not leftovers, f"plain ACL test servers left behind: {leftovers}"


# -- the table -----------------------------------------------------------------------------------------------

Kind = Literal["send", "consume", "create", "other"]


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where an answer goes: the cell, and what its operation touched (for the storage checks)."""

    case: str
    client: str
    side: str
    kind: Kind
    #: The topic a send went to, or the topic an admin request tried to create.
    topic: str | None = None


@dataclasses.dataclass
class Table:
    """Case x client x broker -> answer; and what each broker was asked to store."""

    names: Names
    sides: tuple[str, ...]
    cells: dict[tuple[str, str, str], Answer] = dataclasses.field(default_factory=dict)
    #: Sends that went through, per side and topic.
    sent: dict[str, collections.Counter[str]] = dataclasses.field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    #: Topics admin requests tried to create, per side: whether the request went through.
    created: dict[str, dict[str, bool]] = dataclasses.field(
        default_factory=lambda: collections.defaultdict(dict)
    )
    left_out: list[str] = dataclasses.field(default_factory=lambda: list(LEFT_OUT))

    def record(self, slot: Slot, answer: Answer) -> None:
        self.cells[slot.case, slot.client, slot.side] = answer
        if slot.kind == "send" and answer.passed and slot.topic is not None:
            self.sent[slot.side][slot.topic] += 1
        if slot.kind == "create" and slot.topic is not None:
            self.created[slot.side][slot.topic] = answer.passed

    def row(self, case: Case) -> list[tuple[str, list[Answer | None]]]:
        return [
            (client, [self.cells.get((case.name, client, side)) for side in self.sides])
            for client in case.clients
            if any((case.name, client, side) in self.cells for side in self.sides)
        ]

    def render(self) -> str:
        def text(answer: Answer | None) -> str:
            return "not run" if answer is None else answer.describe()

        lines = [
            "| case | client | " + " | ".join(self.sides) + " | same |",
            "|---|---|" + "---|" * len(self.sides) + "---|",
        ]
        for case in (*CASES, BY_DESIGN):
            for client, answers in self.row(case):
                same = "yes" if len(set(answers)) == 1 and None not in answers else "NO"
                if case is BY_DESIGN and same == "NO":
                    same = "no: differs by design"
                lines.append(f"| {case.name} | {client} | " + " | ".join(map(text, answers)) + f" | {same} |")
        lines.append("")
        lines += [f"left out: {why}" for why in self.left_out]
        return "\n".join(lines)


# -- the project's clients -----------------------------------------------------------------------------------

#: The answers the project's clients get while a cell of theirs runs (the transport records them: what a
#: consumer hears is logged, not raised). Consumer tasks inherit it from the task that starts them.
_HEARD: contextvars.ContextVar[list[tuple[int, str]] | None] = contextvars.ContextVar(
    "aclp_heard", default=None
)


@contextlib.contextmanager
def answers_heard() -> Iterator[None]:
    original = RemotingClient.invoke

    async def invoke(
        client: RemotingClient, addr: str, cmd: RemotingCommand, timeout_ms: float
    ) -> RemotingCommand:
        response = await original(client, addr, cmd, timeout_ms)
        heard = _HEARD.get()
        if heard is not None:
            heard.append((response.code, response.remark or ""))
        return response

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RemotingClient, "invoke", invoke)
        yield


def _split(keys: Keys) -> tuple[str | None, str | None]:
    return (None, None) if keys is None else keys


async def _project_send(
    side: Side, keys: Keys, topics: Sequence[str], names: Names, label: str
) -> list[Answer]:
    """One producer sending one message to each topic: each send's own answer."""
    access_key, secret_key = _split(keys)
    answers = []
    async with Producer(
        unique_name("aclp-py-pg"),
        side.namesrv,
        access_key=access_key,
        secret_key=secret_key,
        send_timeout_ms=SEND_TIMEOUT_MS,
    ) as producer:
        for index, topic in enumerate(topics):
            try:
                await producer.send(Message(topic, f"py {label} {index}".encode()))
            except BrokerError as exc:  # a refusal the client does not resend
                answers.append(refused(exc.code, exc.remark, names))
            except SendFailedError as exc:  # resent, then given up: the last answer is the cause
                cause = exc.__cause__
                if not isinstance(cause, BrokerError):
                    raise
                answers.append(refused(cause.code, cause.remark, names))
            else:
                answers.append(Answer(passed=True))
    return answers


async def _project_consume(
    side: Side, keys: Keys, group: str, topic: str, names: Names, patience_s: float
) -> Answer:
    """A pull consumer from the first offset until it has every seed or its patience runs out; every ACL
    refusal it heard meanwhile."""
    access_key, secret_key = _split(keys)
    heard: list[tuple[int, str]] = []

    async def run() -> bool:
        _HEARD.set(heard)
        consumer = PullConsumer(
            group,
            side.namesrv,
            consume_from="CONSUME_FROM_FIRST_OFFSET",
            access_key=access_key,
            secret_key=secret_key,
        )
        consumer.subscribe(topic)
        bodies: set[bytes] = set()
        deadline = time.monotonic() + patience_s
        try:
            async with consumer:
                while time.monotonic() < deadline and not set(SEEDS) <= bodies:
                    bodies.update(m.body for m in await consumer.poll(0.5))
        except Exception:
            if not _acl_refusals(heard, names):
                raise  # not a refusal this test provoked
        return set(SEEDS) <= bodies

    passed = await asyncio.create_task(run())
    return Answer(passed=passed, refusals=_acl_refusals(heard, names))


async def _project_admin(
    side: Side, keys: Keys, names: Names, request: Callable[[Admin], Awaitable[object]]
) -> Answer:
    access_key, secret_key = _split(keys)
    async with Admin(side.namesrv, access_key=access_key, secret_key=secret_key) as admin:
        try:
            await request(admin)
        except RequestRefusedError as exc:
            return refused(exc.code, exc.remark, names)
    return Answer(passed=True)


def _create(side: Side, topic: str) -> Callable[[Admin], Awaitable[object]]:
    async def create(admin: Admin) -> object:
        return await admin.create_topic(topic, broker_addr=side.broker, read_queue_nums=1, write_queue_nums=1)

    return create


async def _project_cells(side: Side, names: Names) -> list[tuple[Slot, Answer]]:
    """Every cell of the project's clients but the global white address's, on one broker."""
    found: list[tuple[Slot, Answer]] = []

    def slot(case: Case, client: str, kind: Kind, topic: str | None = None) -> Slot:
        return Slot(case.name, client, side.label, kind, topic)

    for case in (*AUTHENTICATION, FAR, NEAR):
        [answer] = await _project_send(side, case.keys, [names.open], names, case.name)
        found.append((slot(case, PY_PRODUCER, "send", names.open), answer))
    allowed, forbidden = await _project_send(side, USER_KEYS, [names.open, names.forbidden], names, "user")
    found.append((slot(ALLOWED, PY_PRODUCER, "send", names.open), allowed))
    found.append((slot(FORBIDDEN_TOPIC, PY_PRODUCER, "send", names.forbidden), forbidden))

    consumes = [
        *((case, names.anonymous_group, REFUSED_PROJECT_CONSUMER_S) for case in AUTHENTICATION),
        (FORBIDDEN_GROUP, names.forbidden_group, REFUSED_PROJECT_CONSUMER_S),
        (ALLOWED, names.group_py, ALLOWED_CONSUMER_S),
    ]
    for case, group, patience in consumes:
        answer = await _project_consume(side, case.keys, group, names.seeded, names, patience)
        found.append((slot(case, PY_CONSUMER, "consume"), answer))

    creations = [
        *((case, case.keys) for case in AUTHENTICATION),
        (ADMIN_ONLY, USER_KEYS),
        (ALLOWED, ADMIN_KEYS),
    ]
    for case, keys in creations:
        topic = names.made(PY_ADMIN, case.name)
        answer = await _project_admin(side, keys, names, _create(side, topic))
        found.append((slot(case, PY_ADMIN, "create", topic), answer))

    async def read_acl_config(admin: Admin) -> object:
        return await admin.acl_config(side.broker)

    answer = await _project_admin(side, BY_DESIGN.keys, names, read_acl_config)
    found.append((slot(BY_DESIGN, PY_ADMIN, "other"), answer))
    return found


async def _project_white_listed_cells(side: Side, names: Names) -> list[tuple[Slot, Answer]]:
    [sent] = await _project_send(side, None, [names.open], names, GLOBAL_WHITE.name)
    topic = names.made(PY_ADMIN, GLOBAL_WHITE.name)
    made = await _project_admin(side, None, names, _create(side, topic))
    return [
        (Slot(GLOBAL_WHITE.name, PY_PRODUCER, side.label, "send", names.open), sent),
        (Slot(GLOBAL_WHITE.name, PY_ADMIN, side.label, "create", topic), made),
    ]


async def _wait_until_white_listed(side: Side) -> None:
    """Until the broker lets an unsigned request through (it reloaded the file with the loopback address)."""
    deadline = time.monotonic() + RELOAD_TIMEOUT_S
    async with Admin(side.namesrv) as admin:
        while True:
            try:
                await admin.broker_runtime_stats(side.broker)
                return
            except RequestRefusedError:
                if time.monotonic() >= deadline:
                    raise AssertionError(f"{side.label} did not reload {side.acl_file} in time") from None
                await asyncio.sleep(0.5)


# -- Apache's clients, in the background ---------------------------------------------------------------------


def _signed(keys: Keys) -> list[str]:
    return [] if keys is None else ["--access-key", keys[0], "--secret-key", keys[1]]


class Peers:
    """The Java and C++ runs: submitted to small thread pools, collected into the table later."""

    def __init__(self, pair: Pair, *, cpp: bool) -> None:
        self.pair = pair
        self.names = pair.names
        self.java = JavaClient(pair.release)
        self.cpp = CppClient() if cpp else None
        self.tools = Launch(pair.root / "tools-work", pair.root / "logs" / "tools")
        self._tools_lock = threading.Lock()
        self._java_pool = concurrent.futures.ThreadPoolExecutor(JAVA_AT_ONCE, thread_name_prefix="aclp-java")
        self._cpp_pool = concurrent.futures.ThreadPoolExecutor(CPP_AT_ONCE, thread_name_prefix="aclp-cpp")
        self._pending: list[tuple[concurrent.futures.Future[list[Answer]], list[Slot]]] = []

    def _folder(self, side: Side, client: str, label: str) -> Path:
        folder = self.pair.root / "peers" / _slug(side.label) / _slug(client) / _slug(label)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # - what each run is

    def _java_send(self, side: Side, label: str, keys: Keys, topics: Sequence[str]) -> list[Answer]:
        specs = [self.java.message(f"java {label} {i}", topic=topic) for i, topic in enumerate(topics)]
        args = ["--topic", topics[0], "--spec", "-", "--keep-going", *_signed(keys)]
        peer = self.java.process(
            "send-sync",
            args,
            namesrv=side.namesrv,
            stdin=json.dumps(specs),
            timeout=PEER_TIMEOUT_S,
            log_dir=self._folder(side, JAVA_PRODUCER, label),
        )
        with peer:
            result = peer.finish()
        answers = []
        for index in range(len(topics)):
            sent = [e for e in result.of("send_result") if e.get("index") == index]
            if sent:
                answers.append(Answer(passed=sent[0]["status"] == "SEND_OK"))
                continue
            errors = [e for e in result.errors if e.get("index") == index]
            assert errors, f"{side.label}, {label}: no result for message {index}: {result.describe()}"
            text = f"{errors[0].get('message', '')}\n{errors[0].get('cause', '')}"
            answers.append(Answer(passed=False, refusals=java_refusals(text, self.names)))
        return answers

    def _java_consume(
        self, side: Side, label: str, keys: Keys, group: str, count: int, timeout: float
    ) -> list[Answer]:
        """One pull consumer's run. A run that read nothing and logged no refusal either is run once more with
        a window three times longer: on a loaded machine the JVM's start-up can leave a short window without a
        single pull (CI saw exactly that), and "nothing happened" is not an answer the broker gave."""
        answer = self._java_consume_once(side, label, keys, group, count, timeout)
        if answer.passed or answer.refusals:
            return [answer]
        return [self._java_consume_once(side, f"{label}-again", keys, group, count, timeout * 3)]

    def _java_consume_once(
        self, side: Side, label: str, keys: Keys, group: str, count: int, timeout: float
    ) -> Answer:
        args = ["--group", group, "--topic", self.names.seeded, "--count", str(count), "--from", "first"]
        log_dir = self._folder(side, JAVA_CONSUMER, label)
        peer = self.java.process(
            "pull-consume", [*args, *_signed(keys)], namesrv=side.namesrv, timeout=timeout, log_dir=log_dir
        )
        with peer:
            result = peer.finish()
        logs = "\n".join(p.read_text("utf-8", "replace") for p in sorted((log_dir / "logs").rglob("*.log")))
        errors = "\n".join(f"{e.get('message', '')}\n{e.get('cause', '')}" for e in result.errors)
        bodies = {m.body for m in result.messages()}
        refusals = java_refusals(f"{logs}\n{errors}\n{result.stderr}", self.names)
        return Answer(passed=set(SEEDS) <= bodies, refusals=refusals)

    def _mqadmin(self, side: Side, label: str, keys: Keys, topic: str) -> list[Answer]:
        """``mqadmin updateTopic`` against the broker, signed by a ``tools.yml`` in a home of its own."""
        folder = self._folder(side, MQADMIN, label)
        home = jvm.rocketmq_home(folder / "rocketmq-home")
        if keys is not None:
            (home / "conf" / "tools.yml").write_text(f"accessKey: {keys[0]}\nsecretKey: {keys[1]}\n", "utf-8")
        (folder / "user-home").mkdir(exist_ok=True)
        classes, classpath = compile_classes(self.pair.release.tools_version)
        args = ["updateTopic", "-n", side.namesrv, "-b", side.broker, "-t", topic, "-r", "1", "-w", "1"]
        argv = jvm.java_argv(
            "tool", [*classpath, classes_jar(classes)], EXITING_MAIN, args, user_home=folder / "user-home"
        )
        with self._tools_lock:
            process = self.tools.process(
                f"mqadmin-{_slug(side.label)}-{_slug(label)}",
                argv,
                env=jvm.java_env(home),
                cwd=folder,
                kill_on_discard=True,
            )
        if not wait_until(process.exited, time.monotonic() + MQADMIN_TIMEOUT_S):
            process.stop(0)
        output = process.log_text()
        if re.search(r"create topic to \S+ success", output):
            return [Answer(passed=True)]
        refusals = java_refusals(output, self.names)
        assert refusals, f"mqadmin neither created {topic} nor was refused:\n{output[-3000:]}"
        return [Answer(passed=False, refusals=refusals)]

    def _cpp_run(
        self, side: Side, client: str, label: str, command: str, args: Sequence[str], stdin: str | None
    ) -> PeerResult:
        assert self.cpp is not None
        peer = self.cpp.process(
            command,
            args,
            namesrv=side.namesrv,
            stdin=stdin,
            timeout=PEER_TIMEOUT_S,
            log_dir=self._folder(side, client, label),
        )
        with peer:
            result = peer.finish()
        if result.fault is not None:
            # The client may have resent what was stored: nothing it reports says anything of the broker.
            raise PeerClientContention(result.describe() + result.keep_native_log())
        return result

    def _cpp_send(self, side: Side, label: str, keys: Keys, topics: Sequence[str]) -> list[Answer]:
        specs = [CppClient.message(f"cpp {label} {i}", topic=topic) for i, topic in enumerate(topics)]
        args = ["--topic", topics[0], "--spec", "-", "--keep-going", *_signed(keys)]
        result = self._cpp_run(side, CPP_PRODUCER, label, "send-sync", args, json.dumps(specs))
        refusals = cpp_refusals(result.native_log_whole, self.names)
        answers = []
        for index in range(len(topics)):
            sent = [e for e in result.of("send_result") if e.get("index") == index]
            if sent:
                answers.append(Answer(passed=sent[0]["status"] == "SEND_OK"))
                continue
            assert [e for e in result.errors if e.get("index") == index], (
                f"{side.label}, {label}: no result for message {index}: {result.describe()}"
            )
            # At most one send of a run is refused: the refusals in its log are that send's.
            answers.append(Answer(passed=False, refusals=refusals))
        return answers

    def _cpp_consume(self, side: Side, label: str, keys: Keys, group: str) -> list[Answer]:
        args = ["--group", group, "--topic", self.names.seeded, "--retries", "1", *_signed(keys)]
        result = self._cpp_run(side, CPP_CONSUMER, label, "pull-consume", args, None)
        bodies = {m.body for m in result.messages()}
        refusals = cpp_refusals(result.native_log_whole, self.names)
        return [Answer(passed=set(SEEDS) <= bodies, refusals=refusals)]

    # - submitting and collecting

    def _submit(
        self, pool: concurrent.futures.ThreadPoolExecutor, slots: list[Slot], work: Callable[[], list[Answer]]
    ) -> None:
        self._pending.append((pool.submit(work), slots))

    def submit_cells(self) -> None:
        """Every Java and C++ cell but the global white address's, on both brokers; the longest first
        (refused Java consumers run for their whole timeout), the brokers interleaved."""
        names = self.names
        sides = self.pair.sides
        consumes = [
            *((case, names.anonymous_group, 1, REFUSED_JAVA_CONSUMER_S) for case in AUTHENTICATION),
            (FORBIDDEN_GROUP, names.forbidden_group, 1, REFUSED_JAVA_CONSUMER_S),
            (ALLOWED, names.group_java, len(SEEDS), ALLOWED_CONSUMER_S),
        ]
        for case, group, count, timeout in consumes:
            for side in sides:
                slot = Slot(case.name, JAVA_CONSUMER, side.label, "consume")
                work = _bind(self._java_consume, side, case.name, case.keys, group, count, timeout)
                self._submit(self._java_pool, [slot], work)
        for side in sides:
            topic = names.made(MQADMIN, ADMIN_ONLY.name)
            slot = Slot(ADMIN_ONLY.name, MQADMIN, side.label, "create", topic)
            self._submit(
                self._java_pool, [slot], _bind(self._mqadmin, side, ADMIN_ONLY.name, USER_KEYS, topic)
            )
        for send, client, pool in (
            (self._java_send, JAVA_PRODUCER, self._java_pool),
            *([(self._cpp_send, CPP_PRODUCER, self._cpp_pool)] if self.cpp is not None else []),
        ):
            for side in sides:
                for case in (*AUTHENTICATION, FAR, NEAR):
                    slot = Slot(case.name, client, side.label, "send", names.open)
                    self._submit(pool, [slot], _bind(send, side, case.name, case.keys, [names.open]))
                slots = [
                    Slot(ALLOWED.name, client, side.label, "send", names.open),
                    Slot(FORBIDDEN_TOPIC.name, client, side.label, "send", names.forbidden),
                ]
                self._submit(pool, slots, _bind(send, side, "user", USER_KEYS, [names.open, names.forbidden]))
        if self.cpp is not None:
            cpp_consumes = [
                *((case, names.anonymous_group) for case in AUTHENTICATION),
                (FORBIDDEN_GROUP, names.forbidden_group),
                (ALLOWED, names.group_cpp),
            ]
            for side in sides:
                for case, group in cpp_consumes:
                    slot = Slot(case.name, CPP_CONSUMER, side.label, "consume")
                    self._submit(
                        self._cpp_pool, [slot], _bind(self._cpp_consume, side, case.name, case.keys, group)
                    )

    def submit_white_listed_cells(self) -> None:
        for side in self.pair.sides:
            slot = Slot(GLOBAL_WHITE.name, JAVA_PRODUCER, side.label, "send", self.names.open)
            work = _bind(self._java_send, side, GLOBAL_WHITE.name, None, [self.names.open])
            self._submit(self._java_pool, [slot], work)
            if self.cpp is not None:
                slot = Slot(GLOBAL_WHITE.name, CPP_PRODUCER, side.label, "send", self.names.open)
                work = _bind(self._cpp_send, side, GLOBAL_WHITE.name, None, [self.names.open])
                self._submit(self._cpp_pool, [slot], work)

    def collect(self, table: Table) -> None:
        """Waits for every submitted run and records its answers."""
        pending, self._pending = self._pending, []
        for future, slots in pending:
            answers = future.result(timeout=600)
            assert len(answers) == len(slots), (slots, answers)
            for slot, answer in zip(slots, answers, strict=True):
                table.record(slot, answer)

    def stop(self) -> list[str]:
        """Cancel what has not started, kill what runs; anything still alive afterwards."""
        for pool in (self._java_pool, self._cpp_pool):
            pool.shutdown(wait=False, cancel_futures=True)
        survivors = [f"java peer pid {pid}" for pid in self.java.close()]
        if self.cpp is not None:
            survivors += [f"cpp peer pid {pid}" for pid in self.cpp.close()]
        for pool in (self._java_pool, self._cpp_pool):
            pool.shutdown(wait=True)
        survivors += [f"java peer pid {pid}" for pid in self.java.close()]
        if self.cpp is not None:
            survivors += [f"cpp peer pid {pid}" for pid in self.cpp.close()]
        return survivors + self.tools.stop(discard=True)


def _bind(function: Callable[..., list[Answer]], *args: object) -> Callable[[], list[Answer]]:
    def work() -> list[Answer]:
        return function(*args)

    return work


# -- the run -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table(
    pair: Pair,
    java_client_unavailable: Callable[[ApacheRelease], str | None],
    cpp_client_unavailable: str | None,
) -> Table:
    """Every cell on both brokers: the Java and C++ runs in the background while the project's clients run,
    then the global white address's cells once both brokers have reloaded the file."""
    reason = java_client_unavailable(pair.release)
    if reason is not None:
        skip_or_fail(reason)
    if cpp_client_unavailable is not None and peers_required():
        pytest.fail(f"the C++ client is required but unavailable: {cpp_client_unavailable}")
    found = Table(pair.names, tuple(side.label for side in pair.sides))
    if cpp_client_unavailable is not None:
        found.left_out.append(f"the C++ client's cells: {cpp_client_unavailable}")
    peers = Peers(pair, cpp=cpp_client_unavailable is None)
    try:
        peers.submit_cells()

        async def project_cells() -> list[list[tuple[Slot, Answer]]]:
            with answers_heard():
                return list(await asyncio.gather(*(_project_cells(side, pair.names) for side in pair.sides)))

        for recorded in asyncio.run(project_cells()):
            for slot, answer in recorded:
                found.record(slot, answer)
        peers.collect(found)

        # The last case: every loopback client is white-listed from here on.
        for side in pair.sides:
            write_acl(side.acl_file, acl_yaml(pair.names, white_listed=True))

        async def white_listed() -> list[list[tuple[Slot, Answer]]]:
            await asyncio.gather(*(_wait_until_white_listed(side) for side in pair.sides))
            peers.submit_white_listed_cells()
            return list(
                await asyncio.gather(*(_project_white_listed_cells(s, pair.names) for s in pair.sides))
            )

        for recorded in asyncio.run(white_listed()):
            for slot, answer in recorded:
                found.record(slot, answer)
        peers.collect(found)
    finally:
        survivors = peers.stop()
    assert not survivors, f"client processes left behind: {survivors}"
    rendered = found.render()
    print(f"\nPlain ACL, Apache {pair.release.version}'s broker and the project's:\n{rendered}")
    log.info("plain ACL table:\n%s", rendered)
    return found


# -- the tests -----------------------------------------------------------------------------------------------


def _case_param(case: Case) -> object:
    difference = KNOWN_DIFFERENCES.get(case.name)
    marks = [pytest.mark.xfail(reason=difference, strict=True)] if difference else []
    return pytest.param(case, id=_slug(case.name), marks=marks)


@pytest.mark.parametrize("case", [_case_param(case) for case in CASES])
def test_the_project_broker_answers_every_client_as_apaches(table: Table, case: Case) -> None:
    rows = table.row(case)
    assert rows, f"no client ran {case.name}"
    problems = []
    for client, (apache, project) in rows:
        expected = case.expected(client)
        if apache != expected:
            shown = "not run" if apache is None else apache.describe()
            problems.append(
                f"{client}: Apache's broker answered {shown}; 4.9.x's code says {expected.describe()}"
            )
        if project != apache:
            shown = "not run" if project is None else project.describe()
            theirs = "not run" if apache is None else apache.describe()
            problems.append(f"{client}: the project's broker answered {shown}, Apache's {theirs}")
    assert not problems, f"{case.name}:\n" + "\n".join(problems)


def test_acl_admin_codes_need_an_admin_account_on_the_project_broker_only(table: Table) -> None:
    """The README's deliberate difference, kept as a row of its own: Apache 4.9.x hands any signed account
    every secret of the file; the project's broker refuses it as it refuses Apache's own admin codes."""
    [(_, (apache, project))] = table.row(BY_DESIGN)
    assert apache == Answer(passed=True)
    assert project == BY_DESIGN.expected(PY_ADMIN)


def test_nothing_refused_is_stored_or_counted(pair: Pair, table: Table) -> None:
    """Per broker: each topic holds exactly the sends that went through (and the seeds), the broker counted
    exactly those puts, refused consumers left no subscription group, refused admin requests no topic."""
    names = pair.names

    async def look(side: Side) -> list[str]:
        problems = []
        sent = table.sent[side.label]
        async with Admin(side.namesrv, access_key=ADMIN_KEYS[0], secret_key=ADMIN_KEYS[1]) as admin:
            stored = {
                topic: (await admin.topic_status(topic)).total_messages
                for topic in (names.open, names.forbidden, names.seeded)
            }
            expected = {
                names.open: sent[names.open],
                names.forbidden: sent[names.forbidden],
                names.seeded: len(SEEDS),
            }
            if stored != expected:
                problems.append(f"stored {stored}, the sends that went through {expected}")
            counted = await _puts(side) - pair.puts_before[side.label]
            if counted != sum(sent.values()):
                problems.append(f"counted {counted} puts, {sum(sent.values())} sends went through")
            for group in (names.anonymous_group, names.forbidden_group):
                configs = await admin.subscription_group_configs(group)
                if configs:
                    problems.append(f"refused group {group} was created: {configs}")
            topics = set(await admin.topic_list())
            for topic, passed in table.created[side.label].items():
                if not passed and topic in topics:
                    problems.append(f"a refused request created topic {topic}")
                if passed:
                    try:
                        await _route_known(admin, topic, 10.0)
                    except AdminError:
                        problems.append(f"an allowed request did not create topic {topic}")
        return [f"{side.label}: {problem}" for problem in problems]

    async def look_at_both() -> list[str]:
        return [p for found in await asyncio.gather(*(look(side) for side in pair.sides)) for p in found]

    problems = asyncio.run(look_at_both())
    assert not problems, "\n".join(problems)
    # Not vacuous: some sends went through and some were refused, on both brokers alike.
    assert table.sent[pair.apache.label] == table.sent[pair.project.label]
    assert sum(table.sent[pair.apache.label].values()) > 0
