"""The cluster fixture's own machinery: provider selection, skip reasons, Java command lines, stopping by pid.

The providers themselves run for real in every ``test_cluster_*`` scenario; these tests pin down what a user
sees when one cannot run, and the parts a scenario would not notice.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import pytest

from tests.integration.apache import class_data, jvm, maven
from tests.integration.apache.cache import CACHE_ENV
from tests.integration.apache.releases import VERSIONS_ENV, ApacheRelease, full_releases, releases
from tests.integration.apache.servers import start_namesrv
from tests.integration.clusters import apache_docker, processes, providers
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import ProviderUnavailable
from tests.integration.clusters.processes import (
    ManagedProcess,
    StartupError,
    free_port,
    free_port_block,
    is_running,
)

pytestmark = [pytest.mark.integration]


def test_provider_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "python")
    assert [s.id for s in providers.provider_specs()] == ["python"]
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "binaries,docker")
    monkeypatch.setenv(VERSIONS_ENV, "4.9.7, 5.3.3")
    assert [s.id for s in providers.provider_specs()] == [
        "binaries-4.9.7",
        "binaries-5.3.3",
        "docker-4.9.7",
        "docker-5.3.3",
    ]
    monkeypatch.delenv("ROCKETMQ_PROVIDERS")
    monkeypatch.delenv(VERSIONS_ENV)
    specs = providers.provider_specs()
    assert {s.family for s in specs} == {"python", "binaries", "docker", "mixed"}
    # The newest 5.x runs with Apache's own servers only; the full releases through every set-up.
    assert {s.id for s in specs if s.release and not s.release.full} == {"binaries-5.5.0"}
    assert "mixed-apache-5.3.3-and-python-brokers" in {s.id for s in specs}
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "python,kafka")
    with pytest.raises(ValueError, match="unknown provider"):
        providers.provider_specs()


def test_the_4x_line_pairs_4_9_7_servers_with_the_4_9_8_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever ROCKETMQ_VERSIONS selected for this run: the pairing holds when 4.9.7 is chosen, alone or not.
    for chosen in ("4.9.7", "5.3.3,4.9.7", ""):
        monkeypatch.setenv(VERSIONS_ENV, chosen)
        [four] = [r for r in releases() if r.major == 4]
        assert (four.version, four.tools_version) == ("4.9.7", "4.9.8")


def test_skip_reasons_name_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    maven.classpath.cache_clear()
    jvm.java_major.cache_clear()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert providers.java_unavailable(ApacheRelease("5.3.3", "5.3.3", True)) == (
        f"JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java"
    )
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, but neither java nor mvn
    with pytest.raises(ProviderUnavailable, match="no Java: JAVA_HOME not set and no java on PATH"):
        jvm.java_home()
    with pytest.raises(ProviderUnavailable, match=re.escape("Maven (mvn) not on PATH")):
        maven.classpath("servers", "5.3.3")
    maven.classpath.cache_clear()


def test_a_release_maven_central_lacks_is_a_readable_reason() -> None:
    maven.classpath.cache_clear()
    # 4.9.8's broker and NameServer were never published to Maven Central (its client and tools were).
    reason = providers.java_unavailable(ApacheRelease("4.9.8", "4.9.8", True))
    maven.classpath.cache_clear()
    assert reason is not None
    assert reason.startswith("Maven could not resolve Apache RocketMQ servers 4.9.8 from Maven Central: ")
    assert "rocketmq-namesrv" in reason or "rocketmq-broker" in reason


def test_java_17_gets_every_open_apache_needs(tmp_path: Path) -> None:
    argv = jvm.java_argv("broker", [tmp_path / "a.jar"], "Main", ["-c", "x"], user_home=tmp_path)
    assert argv[0] == str(jvm.java_home() / "bin" / "java")
    assert argv[-4:] == ["-cp", str(tmp_path / "a.jar"), "Main", "-c", "x"][-4:]
    for package in (
        "java.nio",
        "sun.nio.ch",
        "jdk.internal.ref",
        "java.lang",
        "java.lang.reflect",
        "java.util",
    ):
        assert f"--add-opens=java.base/{package}=ALL-UNNAMED" in argv, package
    assert "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED" in argv
    assert f"-Duser.home={tmp_path}" in argv and "-Xmx384m" in argv
    home = jvm.rocketmq_home(tmp_path / "home")
    assert {p.name for p in (home / "conf").iterdir()} == {
        "logback_namesrv.xml",
        "logback_broker.xml",
        "logback_tools.xml",
    }


def test_docker_reason_names_the_engine_address() -> None:
    reason = apache_docker.engine_unavailable()
    if reason is not None:
        assert reason.startswith(f"no Docker engine answers at {apache_docker.docker_host()}: ")


def test_stop_kills_a_grandchild_that_ignores_sigterm(tmp_path: Path) -> None:
    stubborn = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True)\n"
        "while True: time.sleep(1)"
    )
    process = ManagedProcess(
        "stubborn", ["sh", "-c", f'"{sys.executable}" -c "{stubborn}"; echo never'], tmp_path / "stubborn.log"
    ).start()
    process.wait_for_output(re.compile("^up$", re.M), time.monotonic() + 20)
    pids = process.pids
    assert len(pids) == 2 and all(is_running(p) for p in pids)
    started = time.monotonic()
    assert process.stop(grace_s=1.0) == []
    assert time.monotonic() - started < 10
    assert process.popen.returncode == -signal.SIGTERM  # the shell obeyed SIGTERM; its child needed SIGKILL
    for process_id in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(process_id.pid, 0)


def test_discarding_a_launch_kills_only_the_processes_that_allow_it(tmp_path: Path) -> None:
    """Apache's servers (kill_on_discard) die by SIGKILL at once when the store is thrown away; the
    project's servers still get SIGTERM, so their clean stop stays checked."""
    catches_term = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))\n"
        "print('up', flush=True)\n"
        "while True: time.sleep(1)"
    )
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    killed = launch.process("killed", [sys.executable, "-c", catches_term], kill_on_discard=True)
    termed = launch.process("termed", [sys.executable, "-c", catches_term])
    for process in (killed, termed):
        process.wait_for_output(re.compile("^up$", re.M), time.monotonic() + 20)
    started = time.monotonic()
    assert launch.stop(discard=True) == []
    assert time.monotonic() - started < 5
    assert killed.popen.returncode == -signal.SIGKILL
    # SIGTERM reaches the group and the process: a second one during the interpreter's exit (handlers are
    # reset by then) ends it by the signal instead of its exit(7). Either way: terminated, not killed.
    assert termed.popen.returncode in (7, -signal.SIGTERM)


def _dies_with(message: str) -> str:
    return f"import sys; print({message!r}, flush=True); sys.exit(1)"


@pytest.mark.parametrize(
    ("first_words", "attempts"),
    [("java.net.BindException: Address already in use", 2), ("java.lang.OutOfMemoryError", 1)],
)
def test_a_start_that_lost_its_port_is_tried_once_more_on_fresh_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_words: str, attempts: int
) -> None:
    """Another worker's server can bind a port between its pick and its use: only that failure is worth a
    second start; anything else is raised at once with the first attempt's logs."""
    ports: list[int] = []

    def start(launch: Launch) -> providers.Started:
        ports.append(free_port())
        words = first_words if len(ports) == 1 else "up"
        code = _dies_with(words) if words != "up" else "print('up', flush=True)"
        process = launch.process("namesrv", [sys.executable, "-c", code])
        process.wait_for_output(re.compile("^up$", re.M), time.monotonic() + 20)
        return providers.Started(NamesrvEndpoint(f"127.0.0.1:{ports[-1]}", "test"), (("b", "python"),))

    registered = types.SimpleNamespace(broker_addrs=["127.0.0.1:10911"])
    monkeypatch.setattr(providers, "wait_for_broker_sync", lambda *_: registered)

    spec = providers.ProviderSpec("fake", "python", start, register_timeout_s=1.0)
    logs = tmp_path / "logs"
    if attempts == 1:
        with pytest.raises(StartupError, match="OutOfMemoryError"):
            providers.start_cluster(spec, tmp_path / "work", logs)
        assert len(ports) == 1
        return
    cluster, launch = providers.start_cluster(spec, tmp_path / "work", logs)
    assert launch.stop(discard=True) == []
    assert len(ports) == 2 and cluster.namesrv == f"127.0.0.1:{ports[1]}"
    assert "BindException" in (tmp_path / "logs-port-taken" / "namesrv.log").read_text()
    assert "BindException" not in (logs / "namesrv.log").read_text()


def test_port_block_leaves_room_for_the_vip_and_ha_ports() -> None:
    port = free_port_block()
    assert 1024 < port - 2 and port + 1 < 65536


def test_server_ports_stay_below_the_ephemeral_range_and_are_not_handed_out_twice() -> None:
    """Outgoing connections take their local ports from the ephemeral range, so a server port picked there
    could be taken before the server binds it."""
    floor = processes._ephemeral_floor()
    blocks = [free_port_block() for _ in range(50)]
    singles = [free_port() for _ in range(50)]
    taken = [p + o for p in blocks for o in (-2, 0, 1)] + singles
    assert all(processes.SERVER_PORTS_FLOOR <= p < floor for p in taken), (floor, sorted(taken)[:5])
    assert len(set(taken)) == len(taken), "a port was handed out twice"


def test_a_container_that_did_not_boot_is_started_once_more_and_then_the_failure_is_raised() -> None:
    """Ports are picked seconds before the JVM binds them, so one failed boot gets a second start (which
    picks its ports again); a second failure, or the engine refusing, is not retried."""
    calls: list[str] = []
    server = apache_docker.DockerServer("b", "img", "abc", "127.0.0.1:1")

    def flaky() -> apache_docker.DockerServer:
        calls.append("flaky")
        if len(calls) == 1:
            raise apache_docker.NotBooted("b did not boot: BindException")
        return server

    assert apache_docker._with_fresh_ports("b", flaky) is server and len(calls) == 2

    calls.clear()

    def broken() -> apache_docker.DockerServer:
        calls.append("broken")
        raise apache_docker.NotBooted(f"attempt {len(calls)}")

    with pytest.raises(apache_docker.NotBooted, match="attempt 2"):
        apache_docker._with_fresh_ports("b", broken)

    calls.clear()

    def refused() -> apache_docker.DockerServer:
        calls.append("refused")
        raise StartupError("b: the Docker engine refused")

    with pytest.raises(StartupError, match="refused"):
        apache_docker._with_fresh_ports("b", refused)
    assert calls == ["refused"]


def _hello_jar(folder: Path) -> Path:
    """A jar whose main class loads a few JDK classes and prints one line."""
    source = folder / "Hello.java"
    source.write_text(
        "public class Hello { public static void main(String[] a) {"
        ' System.out.println(new java.util.TreeMap<String, String>(java.util.Map.of("k", "v"))); } }\n',
        "utf-8",
    )
    javac = jvm.java_home() / "bin" / "javac"
    if not javac.exists():
        pytest.skip(f"no javac in {jvm.java_home()}: the JDK's compiler is needed to build a test jar")
    subprocess.run([str(javac), "-d", str(folder), str(source)], check=True, capture_output=True)
    jar = folder / "hello.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.write(folder / "Hello.class", "Hello.class")
    return jar


def test_a_tool_run_dumps_its_classes_and_later_runs_map_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(class_data, "SETTLED_S", 0.0)
    jar = _hello_jar(tmp_path)

    def argv() -> list[str]:
        return jvm.java_argv("tool", [jar], "Hello", [], user_home=tmp_path)

    def run(command: list[str]) -> str:
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout

    first = argv()
    dumps = [a for a in first if a.startswith("-XX:ArchiveClassesAtExit=")]
    assert len(dumps) == 1, first
    # while that dump is reserved (its run still going), nobody else dumps the same archive
    assert not any("SharedArchive" in a or "ArchiveClasses" in a for a in argv())
    # the JVM's own warnings (it cannot archive some classes) would land among the tool's output
    assert run(first) == "{k=v}\n"
    second = argv()
    assert run(second) == "{k=v}\n"
    [mapped] = [a for a in second if a.startswith("-XX:SharedArchiveFile=")]
    archive = Path(mapped.split("=", 1)[1])
    assert archive.is_file()
    assert not list(archive.parent.glob("*.dump")) and not list(archive.parent.glob("*.pending"))
    # the JVM maps it: -Xshare:on makes an archive it cannot use fatal
    strict = [second[0], "-Xshare:on", *second[1:]]
    assert subprocess.run(strict, capture_output=True, text=True, timeout=120).returncode == 0


def test_a_damaged_dump_is_deleted_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(class_data, "SETTLED_S", 0.0)
    jar = _hello_jar(tmp_path)
    first = jvm.java_argv("tool", [jar], "Hello", [], user_home=tmp_path)
    [dump_option] = [a for a in first if a.startswith("-XX:ArchiveClassesAtExit=")]
    dump = Path(dump_option.split("=", 1)[1])
    # as a JVM killed while writing it might leave it: a real archive, cut short
    subprocess.run([first[0], dump_option, "-cp", str(jar), "Hello"], check=True, timeout=120)
    dump.write_bytes(dump.read_bytes()[: dump.stat().st_size // 2])
    monkeypatch.chdir(tmp_path)
    again = jvm.java_argv("tool", [jar], "Hello", [], user_home=tmp_path)
    assert not dump.exists()
    assert not list(tmp_path.glob("hs_err*")) and not list(dump.parent.glob("*.log")), "crash reports"
    assert not any("SharedArchiveFile" in a for a in again)
    assert any(a.startswith("-XX:ArchiveClassesAtExit=") for a in again), "the next run dumps afresh"


def test_a_server_dumps_its_classes_once_booted_and_the_next_start_maps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Servers are ended with SIGKILL, so they dump through jcmd after their boot line, not at exit."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(class_data, "SETTLED_S", 0.0)
    release = full_releases()[0]
    reason = providers.java_unavailable(release)
    if reason is not None:
        pytest.skip(reason)
    folder = tmp_path / "cache" / "class-data"
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    try:
        start_namesrv(launch, release, "first-namesrv")
        first = launch.processes[-1]
        assert "-XX:+RecordDynamicDumpInfo" in first.argv
        deadline = time.monotonic() + 60
        while not _dump_done(folder):
            assert time.monotonic() < deadline, sorted(p.name for p in folder.iterdir())
        start_namesrv(launch, release, "second-namesrv")
        second = launch.processes[-1]
        assert any(a.startswith("-XX:SharedArchiveFile=") for a in second.argv), second.argv
        assert list(folder.glob("*.jsa")) and not list(folder.glob("*.dump"))
    finally:
        assert launch.stop(discard=True) == []


def _dump_done(folder: Path) -> bool:
    """jcmd has written the dump: there is one, and its size stopped changing."""
    sizes = [p.stat().st_size for p in folder.glob("*.dump")]
    time.sleep(1.0)
    return bool(sizes) and all(sizes) and sizes == [p.stat().st_size for p in folder.glob("*.dump")]
