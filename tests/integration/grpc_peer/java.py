"""Apache's Java gRPC client (Maven Central ``rocketmq-client-java``) as a test peer beside the Python SDK.

``tests/integration/java/grpc/rmqit/GrpcPeer.java`` (the project's own program) is compiled at test time
against the client's jar, resolved into the suite's cache by :mod:`tests.integration.apache.maven` (profile
``grpc-client``), with the JSON-lines writer of the remoting Java peer; the classes are cached by content
like that peer's. One run plays a whole scenario (every message type sent, then read back by the
PushConsumer and SimpleConsumers), so a set-up costs one JVM start.
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.apache import jvm, maven
from tests.integration.apache.cache import cache_root, content_hash
from tests.integration.grpc_peer.runner import PeerRun, run_argv
from tests.integration.java_peer.build import (
    JAVA_RELEASE,
    SRC_DIR,
    classes_jar,
    compile_sources,
    default_user_home,
    java_env,
)

#: The newest release of the Java gRPC client on Maven Central (its own version line, not the servers').
CLIENT_VERSION = "5.2.0"
MAIN_CLASS = "rmqit.GrpcPeer"
GRPC_SRC_DIR = SRC_DIR.parent / "grpc"
#: The remoting peer's sources this program shares: its JSON writer and its stdout lines.
SHARED_SOURCES = ("Json.java", "Out.java")


def sources() -> list[Path]:
    return [*sorted(GRPC_SRC_DIR.rglob("*.java")), *(SRC_DIR / "rmqit" / name for name in SHARED_SOURCES)]


def program() -> list[str]:
    """``java [options] -cp CLIENT:CLASSES rmqit.GrpcPeer``: the argv before the program's options.

    :class:`~tests.integration.clusters.model.ProviderUnavailable` says what is missing (Maven or the jar,
    ``javac``, or the compiler's complaint).
    """
    classpath = maven.classpath("grpc-client", CLIENT_VERSION)
    key = content_hash(sources(), CLIENT_VERSION, JAVA_RELEASE, *(jar.name for jar in classpath))
    target = cache_root() / "java-grpc-peer" / f"{CLIENT_VERSION}-{key}"
    classes = compile_sources(
        sources(), classpath, target, "rmqit/GrpcPeer.class", f"rocketmq-client-java {CLIENT_VERSION}"
    )
    # The client logs under ${user.home}/logs/rocketmq; its console appender stays off.
    return jvm.java_argv(
        "tool",
        [*classpath, classes_jar(classes)],
        MAIN_CLASS,
        [],
        user_home=default_user_home(),
    )


def run(args: list[str], timeout: float) -> PeerRun:
    """One run of the program with ``args`` (killed ``timeout`` + 30 s after it started). Builds the command
    line afresh: a tool's first run reserves the class-data dump, so an argv is for one run only."""
    return run_argv([*program(), *args], timeout, java_env())
