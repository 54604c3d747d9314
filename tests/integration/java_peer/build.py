"""Compiling the Java peer against a release's client jars, and running it as a :class:`PeerClient`.

``java_peer_program(release)`` compiles ``tests/integration/java/src`` with ``javac`` against
``maven.classpath("tools", release.tools_version)`` into
``cache_root()/java-peer/<tools_version>-<content hash>/classes`` once (later calls reuse it), then returns
the ``java … rmqit.Peer`` prefix the runner puts a command after. The classes are compiled into a temporary
folder and renamed into place, so a compile that was interrupted is never reused; a file lock keeps two
pytest processes from compiling at once.

The client's header serialization is ``-Drocketmq.serialize.type`` (JSON or ROCKETMQ), as for any Apache
client: each :class:`JavaClient` is built for one. Every command starts a JVM, except that
:meth:`JavaClient.steps` runs several in one (:class:`Step`, shared out again by :func:`split_steps`).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import uuid
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.integration.apache import jvm, maven
from tests.integration.apache.cache import cache_root, content_hash
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.model import ProviderUnavailable
from tests.integration.cpp_peer.runner import PeerClient, PeerProcess, PeerResult

SRC_DIR = Path(__file__).resolve().parents[1] / "java" / "src"
MAIN_CLASS = "rmqit.Peer"
#: The logging configuration among the sources; copied next to the classes and named by system properties.
LOGBACK_FILE = "rmqit-logback.xml"
#: Java 8 bytecode: the 4.9.x client still supports Java 8, and the program uses nothing newer.
JAVA_RELEASE = "8"
JAVAC_TIMEOUT_S = 300.0
#: A JVM starting on a busy 2-core machine, plus the probe itself.
PROBE_TIMEOUT_S = 90.0
SERIALIZE_TYPES = ("JSON", "ROCKETMQ")
#: Lines of javac's output kept in the reason when the sources do not compile.
ERROR_LINES = 12


class JavaPeerBuildError(ProviderUnavailable):
    """``javac`` refused the sources (the reason holds its first lines)."""


def sources() -> list[Path]:
    """The peer's Java sources."""
    return sorted(SRC_DIR.rglob("*.java"))


def _inputs() -> list[Path]:
    return [*sources(), SRC_DIR / LOGBACK_FILE]


def javac() -> Path:
    """The ``javac`` of :func:`~tests.integration.apache.jvm.java_home`."""
    home = jvm.java_home()
    path = home / "bin" / "javac"
    if not path.exists():
        raise ProviderUnavailable(
            f"no javac in {home}/bin (a JRE, not a JDK): the Java peer is compiled at test time"
        )
    return path


def build_dir(tools_version: str, classpath: Sequence[Path]) -> Path:
    """Where the classes for ``tools_version`` go: keyed by the sources, the jars and the bytecode level."""
    key = content_hash(_inputs(), tools_version, JAVA_RELEASE, *(jar.name for jar in classpath))
    return cache_root() / "java-peer" / f"{tools_version}-{key}"


def _release_flags(javac_path: Path) -> list[str]:
    major = jvm.java_major(javac_path.parent.parent)
    if major >= 9:
        return ["--release", JAVA_RELEASE, "-Xlint:-options"]
    return ["-source", JAVA_RELEASE, "-target", JAVA_RELEASE]


def _first_lines(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    kept = lines[:ERROR_LINES]
    more = f" … ({len(lines) - len(kept)} more lines)" if len(lines) > len(kept) else ""
    return " | ".join(kept) + more


def compile_classes(tools_version: str) -> tuple[Path, tuple[Path, ...]]:
    """The classes folder for ``tools_version`` (compiling it if needed) and the client classpath.

    Raises :class:`ProviderUnavailable` naming what is missing: Maven or the jars, ``javac``, or (as
    :class:`JavaPeerBuildError`) the compiler's complaint.
    """
    classpath = maven.classpath("tools", tools_version)
    target = build_dir(tools_version, classpath)
    classes = compile_sources(
        sources(), classpath, target, "rmqit/Peer.class", f"rocketmq-client {tools_version}", [LOGBACK_FILE]
    )
    return classes, classpath


def compile_sources(
    java_files: Sequence[Path],
    classpath: Sequence[Path],
    target: Path,
    marker_class: str,
    against: str,
    resources: Sequence[str] = (),
) -> Path:
    """``target/classes``, compiled from ``java_files`` against ``classpath`` unless ``marker_class`` (a
    path inside it) is already there; ``resources`` (names in the peer's source folder) are copied beside
    the classes. ``against`` names the jars in the compiler's complaint. Shared by every Java program of the
    suite, so each gets the same locking and the same never-half-built guarantee."""
    classes = target / "classes"
    marker = classes / marker_class
    if marker.is_file():
        return classes
    compiler = javac()
    target.mkdir(parents=True, exist_ok=True)
    with (target.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():  # another process compiled it while we waited
            return classes
        staging = Path(tempfile.mkdtemp(prefix=".classes-", dir=target))
        try:
            argv = [
                str(compiler),
                *_release_flags(compiler),
                "-encoding",
                "UTF-8",
                "-nowarn",
                "-cp",
                os.pathsep.join(str(jar) for jar in classpath),
                "-d",
                str(staging),
                *(str(path) for path in java_files),
            ]
            try:
                result = subprocess.run(
                    argv, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S, check=False
                )
            except subprocess.TimeoutExpired as exc:
                raise JavaPeerBuildError(
                    f"javac did not compile the Java peer within {JAVAC_TIMEOUT_S:.0f} s"
                ) from exc
            if result.returncode != 0:
                raise JavaPeerBuildError(
                    f"javac could not compile the Java peer against {against}: "
                    + _first_lines(result.stderr + result.stdout)
                )
            for name in resources:
                shutil.copy2(SRC_DIR / name, staging / name)
            staging.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from other users
            if classes.exists():  # a stale, unmarked folder (e.g. emptied by hand)
                shutil.rmtree(classes)
            staging.rename(classes)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return classes


def classes_jar(classes: Path) -> Path:
    """The compiled classes as a jar next to their folder (made once): what goes on the classpath.

    Java archives the classes of a run for the next ones (see ``apache/class_data.py``) only when every
    classpath entry is a jar, and the peer and mqadmin start several hundred times in a run of the suite.
    """
    jar = classes.parent / "rmqit.jar"
    if jar.is_file():
        return jar
    staging = jar.with_name(f".rmqit-{os.getpid()}-{uuid.uuid4().hex[:8]}.jar")
    try:
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(classes).as_posix())
        os.replace(staging, jar)
    finally:
        staging.unlink(missing_ok=True)
    return jar


def default_user_home() -> Path:
    """The JVM's ``user.home`` when none is given (the peer itself moves logs under ``$HOME``)."""
    home = cache_root() / "java-peer" / "home"
    home.mkdir(parents=True, exist_ok=True)
    return home


def java_peer_program(
    release: ApacheRelease,
    serialize: str = "JSON",
    *,
    user_home: Path | None = None,
    tls: bool = False,
    share_classes: bool = True,
) -> list[str]:
    """``java [options] -cp JARS:CLASSES rmqit.Peer``: the argv before the command. ``tls``: the client
    connects with TLS, trusting any server (``-Dtls.enable=true``, Apache's test mode). ``share_classes``:
    the run uses or dumps the class-data archive (for one run only: see :meth:`JavaClient.program_argv`)."""
    if serialize not in SERIALIZE_TYPES:
        raise ValueError(f"serialize must be one of {SERIALIZE_TYPES}, not {serialize!r}")
    classes, classpath = compile_classes(release.tools_version)
    logback = classes / LOGBACK_FILE
    properties = {
        "rocketmq.serialize.type": serialize,
        # 4.x: the client's own file logger, not slf4j; 4.x logback (tools, netty) and 5.x's shaded logback
        # read our configuration, which writes into a file.
        "rocketmq.client.logUseSlf4j": "false",
        "logback.configurationFile": str(logback),
        "rmq.logback.configurationFile": str(logback),
        **jvm.LOADED_MACHINE_CLIENT_PROPERTIES,
    }
    if tls:
        properties |= {"tls.enable": "true", "tls.test.mode.enable": "true"}
    return jvm.java_argv(
        "tool",
        [*classpath, classes_jar(classes)],
        MAIN_CLASS,
        [],
        user_home=user_home or default_user_home(),
        system_properties=properties,
        share_classes=share_classes,
    )


def java_env() -> dict[str, str]:
    """The peer's environment: ``JAVA_HOME``, an ``ROCKETMQ_HOME`` of ours, no ``JAVA_TOOL_OPTIONS``."""
    return jvm.java_env(jvm.rocketmq_home(cache_root() / "rocketmq-home"))


class JavaClient(PeerClient):
    """Apache's Java client of ``release`` (its ``tools_version``) with ``serialize`` headers, as a peer.

    Every command runs in a JVM of its own (``rmqit.Peer``), unless several are run as :meth:`steps`; the
    methods of :class:`PeerClient` apply, plus the commands only the Java peer has.
    """

    def __init__(self, release: ApacheRelease, serialize: str = "JSON", *, tls: bool = False) -> None:
        self.release = release
        self.serialize = serialize
        self.tls = tls
        super().__init__(
            f"java peer {release.tools_version}/{serialize}{'/TLS' if tls else ''}",
            java_peer_program(release, serialize, tls=tls, share_classes=False),
            env=java_env(),
        )

    def program_argv(self) -> list[str]:
        """Built afresh for each run: the first runs dump the class-data archive the later ones map, and
        only one run may dump it (``apache/class_data.py``)."""
        return java_peer_program(self.release, self.serialize, tls=self.tls)

    def send_async(
        self, namesrv: str, topic: str, messages: Sequence[Mapping[str, Any]], **kw: Any
    ) -> PeerResult:
        """Every message in flight at once through ``send(msg, callback)``; results arrive in any order."""
        return self.send("send-async", namesrv, topic, messages, **kw)

    def send_transaction(
        self,
        namesrv: str,
        topic: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        local_state: str = "COMMIT",
        check_state: str = "COMMIT",
        wait_checks: int = 0,
        linger: float = 0.0,
        **kw: Any,
    ) -> PeerResult:
        """``sendMessageInTransaction``: the local transaction answers ``local_state``, check-backs
        ``check_state`` (each one a ``check`` line); the producer stays up for ``wait_checks`` check-backs and
        ``linger`` seconds more."""
        extra = [
            *("--local-state", local_state, "--check-state", check_state),
            *("--wait-checks", str(wait_checks), "--linger", str(linger)),
            *kw.pop("extra", ()),
        ]
        return self.send("send-transaction", namesrv, topic, messages, extra=extra, **kw)

    def sql_select(
        self,
        namesrv: str,
        topic: str,
        expressions: Sequence[str],
        *,
        group: str | None = None,
        timeout: float = 120.0,
    ) -> PeerResult:
        """``DefaultMQPullConsumer.pull(queue, MessageSelector.bySql(sql), ...)`` over every queue of
        ``topic``, first to last offset, for each expression in turn: ``message`` lines carry ``expression``
        (its index), and a ``selected`` line with the count ends each expression."""
        args = ["--topic", topic, *(arg for sql in expressions for arg in ("--sql", sql))]
        if group is not None:
            args += ["--group", group]
        return self.run("sql-select", args, namesrv=namesrv, timeout=timeout)

    def route(self, namesrv: str, topic: str, *, timeout: float = 60.0) -> PeerResult:
        """``fetchPublishMessageQueues(topic)``: one ``route`` line."""
        return self.run("route", ["--topic", topic], namesrv=namesrv, timeout=timeout)

    def clusters(self, namesrv: str, *, timeout: float = 60.0) -> PeerResult:
        """``DefaultMQAdminExt.examineBrokerClusterInfo()``: one ``clusters`` line."""
        return self.run("clusters", [], namesrv=namesrv, timeout=timeout)

    def topic_route(self, namesrv: str, topic: str, *, timeout: float = 60.0) -> PeerResult:
        """``DefaultMQAdminExt.examineTopicRouteInfo(topic)``: one ``topic_route`` line."""
        return self.run("topic-route", ["--topic", topic], namesrv=namesrv, timeout=timeout)

    def recall(
        self, namesrv: str, topic: str, handles: Sequence[str], *, timeout: float = 60.0
    ) -> PeerResult:
        """``recallMessage(topic, handle)`` of a 5.3.2+ client for each handle: a ``recalled`` line each."""
        args = ["--topic", topic, *(arg for handle in handles for arg in ("--handle", handle))]
        return self.run("recall", args, namesrv=namesrv, timeout=timeout)

    def request(
        self, namesrv: str, topic: str, messages: Sequence[Mapping[str, Any]], *, timeout: float = 120.0
    ) -> PeerResult:
        """``DefaultMQProducer.request(msg, timeout)`` for each message in turn: a ``reply`` line each."""
        return self.send("request", namesrv, topic, messages, timeout=timeout)

    def start_responder(
        self, namesrv: str, group: str, topic: str, count: int, *, timeout: float = 120.0
    ) -> PeerProcess:
        """A push consumer answering each request of ``topic`` with ``createReplyMessage(request, "reply:" +
        body)``, in the background: ``wait_for("ready")``, send requests, then ``finish()``."""
        args = ["--group", group, "--topic", topic, "--count", str(count)]
        return self.process("respond", args, namesrv=namesrv, timeout=timeout).start()

    def probe(self, *, timeout: float = PROBE_TIMEOUT_S) -> PeerResult:
        """No server: the client's version and the JVM's."""
        return self.run("probe", timeout=timeout)

    def steps(self, steps: Sequence[Step], *, timeout: float) -> list[PeerResult]:
        """Several commands one after another in one JVM (``rmqit.Peer steps``), each as it would run alone:
        its own client, shut down before the next step starts, and its own ``--timeout``. Returns one result
        per step, as if each had been a process of its own (same pid); a step the run never reached (the JVM
        was killed at ``timeout``) has no ``done`` line and fails its check. A JVM start costs about a second
        of CPU, most of what a short command spends."""
        stdin = json.dumps([step.argv() for step in steps])
        whole = self.run("steps", ["--spec", "-"], stdin=stdin, timeout=timeout)
        return split_steps(whole, steps)


@dataclasses.dataclass(frozen=True)
class Step:
    """One command of :meth:`JavaClient.steps`: what :meth:`PeerClient.run` would be given for it."""

    command: str
    args: Sequence[str] = ()
    namesrv: str | None = None
    timeout: float = 30.0

    def argv(self) -> list[str]:
        """The command line as a process of its own would get it after the program."""
        namesrv = ["--namesrv", self.namesrv] if self.namesrv is not None else []
        return [self.command, *namesrv, *self.args, "--timeout", str(self.timeout)]


def split_steps(whole: PeerResult, steps: Sequence[Step]) -> list[PeerResult]:
    """``whole``'s events shared out between its steps: a ``step`` line opens one, ``step_end`` (with the
    code the step would have exited with) closes it. A step never closed ends like a killed process (the
    run's own code, ``killed`` when the runner killed it); the output the steps share (stderr, stdout lines
    that were not JSON) goes with every step, for failure messages."""
    events: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(steps))}
    codes: dict[int, int] = {}
    current: int | None = None
    for event in whole.events:
        kind = event.get("event")
        if kind == "step":
            current = int(event["index"])
        elif kind == "step_end":
            codes[int(event["index"])] = int(event["code"])
            current = None
        elif current is not None and current in events:
            events[current].append(event)
        else:  # an error of the run itself (a usage error, the watchdog's timeout): every open step's
            for index in events:
                if index not in codes:
                    events[index].append(event)
    results = []
    for index, step in enumerate(steps):
        closed = index in codes
        results.append(
            dataclasses.replace(
                whole,
                command=step.command,
                argv=step.argv()[1:],
                returncode=codes[index] if closed else whole.returncode,
                events=events[index],
                killed=False if closed else whole.killed,
            )
        )
    return results


def client_version_name(tools_version: str) -> str:
    """What ``MQVersion.getVersionDesc(CURRENT_VERSION)`` prints for a release: ``V5_3_3`` for 5.3.3."""
    return "V" + tools_version.replace(".", "_")


def java_peer_unavailable(release: ApacheRelease) -> str | None:
    """None when the Java peer of ``release`` compiles and starts here, else exactly what is missing: no Java
    or javac, jars Maven cannot resolve (its reason), a compile error (javac's first lines), a failed probe.
    """
    try:
        client = JavaClient(release)
    except ProviderUnavailable as exc:
        return str(exc)
    try:
        result = client.probe()
    finally:
        client.close()
    libraries = result.of("library")
    if not (result.ok and libraries):
        first = result.errors[0] if result.errors else None
        detail = f"{first.get('error_type')}: {first.get('message')}" if first else result.describe()
        return f"the Java peer for rocketmq-client {release.tools_version} does not start: {detail}"
    found = libraries[0].get("client_version")
    wanted = client_version_name(release.tools_version)
    if found != wanted:
        return (
            f"the Java peer for {release.tools_version} runs client {found}, not {wanted} (classpath mix-up)"
        )
    return None
