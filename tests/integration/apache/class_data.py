"""Class-data archives (Java's AppCDS) for the short-lived JVMs: mqadmin and the Java client peer.

A run of mqadmin or of the Java peer spends most of its CPU loading and verifying the same few thousand
classes (the client, remoting, Netty, fastjson). The suite starts several hundred of them, so this is a
large share of CI's time. Java 17 can dump the classes a run loaded into an archive when it exits
(``-XX:ArchiveClassesAtExit``) and map that archive into later runs of the same classpath
(``-XX:SharedArchiveFile``): measured on the peer's ``clusters`` command, 1.4 s of CPU became 0.8 s.

How an archive comes to be, without a training run of its own and safe between concurrent workers:

1. a launch that finds no archive (and no other launch dumping one) reserves the dump with an exclusive
   ``.pending`` file and dumps what its real work loaded into a file of its own when it exits;
2. a later launch finds that dump, has the JVM check it (``-Xshare:on … -version`` fails on a truncated
   file or a changed classpath) and only then renames it to the archive; a dump that fails the check is
   deleted, and the next launch dumps again.

An archive is keyed by the JVM, its options and each classpath entry's size and time, so a new jar or
JDK gets a new one; the JVM also refuses an archive whose classpath changed, and falls back to loading
classes from the jars. Archives need jars: a classpath holding a folder cannot be archived, and gets no
options at all. ``RMQ_IT_CDS=0`` turns this off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from tests.integration.apache.cache import cache_root, turned_off

log = logging.getLogger(__name__)

DISABLE_ENV = "RMQ_IT_CDS"
#: A dump this many seconds old is finished: the JVM writes it in one go at exit.
SETTLED_S = 10.0
#: A reservation this old belongs to a launch that never dumped (killed, or still running a long command).
STALE_PENDING_S = 600.0
CHECK_TIMEOUT_S = 60.0
#: The JVM prints its own warnings (an archive it cannot use, classes it cannot dump) on stdout, where
#: mqadmin's output and the peer's JSON lines are read; they go to stderr instead.
WARNINGS_TO_STDERR = ("-Xlog:disable", "-Xlog:all=warning:stderr")


def enabled() -> bool:
    return not turned_off(DISABLE_ENV)


def _key(java: Path, options: Sequence[str], classpath: Sequence[Path], main_class: str) -> str:
    digest = hashlib.sha256()
    for part in (str(java.resolve()), *options, main_class):
        digest.update(part.encode() + b"\0")
    for entry in classpath:
        stat = entry.stat()
        digest.update(f"{entry.resolve()}|{stat.st_size}|{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:20]


def _accepted(java: Path, options: Sequence[str], classpath: str, archive: Path) -> bool:
    """Whether the JVM maps ``archive`` for this classpath (``-Xshare:on`` makes any problem fatal)."""
    # A truncated archive makes the JVM abort, and it writes its crash report beside the archive, not
    # into the caller's working folder.
    crash_report = archive.with_suffix(".crash.log")
    argv = [str(java), "-Xshare:on", f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={crash_report}"]
    argv += [*options, "-XX:-CreateCoredumpOnCrash", "-cp", classpath, "-version"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=CHECK_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False
    finally:
        crash_report.unlink(missing_ok=True)
    return result.returncode == 0


def _settle(java: Path, options: Sequence[str], classpath: str, folder: Path, key: str) -> Path | None:
    """The archive, promoting a finished dump that the JVM accepts; None while there is none."""
    archive = folder / f"{key}.jsa"
    if archive.is_file():
        return archive
    now = time.time()
    for dump in sorted(folder.glob(f"{key}.*.dump")):
        try:
            if now - dump.stat().st_mtime < SETTLED_S:
                continue
        except FileNotFoundError:
            continue  # another launch promoted or deleted it
        if _accepted(java, options, classpath, dump):
            with contextlib.suppress(FileNotFoundError):
                os.replace(dump, archive)
                log.info("class-data archive %s ready", archive)
        else:
            log.warning("a class-data dump the JVM refuses was deleted: %s", dump)
            dump.unlink(missing_ok=True)
        (folder / f"{key}.pending").unlink(missing_ok=True)
        if archive.is_file():
            return archive
    return None


def _reserve_dump(folder: Path, key: str) -> Path | None:
    """A file name to dump into, if no other launch is dumping this archive."""
    pending = folder / f"{key}.pending"
    for _ in range(2):
        try:
            os.close(os.open(pending, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            with contextlib.suppress(FileNotFoundError):
                if time.time() - pending.stat().st_mtime > STALE_PENDING_S:
                    pending.unlink()
                    continue
            return None
        return folder / f"{key}.{uuid.uuid4().hex[:12]}.dump"
    return None


@dataclasses.dataclass(frozen=True)
class ArchivePlan:
    """What one launch does about its program's archive: ``options`` go before ``-cp``; ``dump_to`` is
    set when a server should dump its classes there once it has started (:func:`dump_running`)."""

    options: list[str]
    dump_to: Path | None = None


def plan(
    java: Path, options: Sequence[str], classpath: Sequence[Path], main_class: str, *, at_exit: bool
) -> ArchivePlan:
    """Use the archive of this program, or reserve the dump of one: when the run exits (``at_exit``, the
    tools), or from the running JVM through ``jcmd`` (the servers, which are ended with SIGKILL and so
    never reach the JVM's exit)."""
    if not enabled() or any(entry.is_dir() for entry in classpath):
        return ArchivePlan([])
    folder = cache_root() / "class-data"
    folder.mkdir(parents=True, exist_ok=True)
    key = _key(java, options, classpath, main_class)
    joined = os.pathsep.join(str(entry) for entry in classpath)
    archive = _settle(java, options, joined, folder, key)
    if archive is not None:
        return ArchivePlan([*WARNINGS_TO_STDERR, f"-XX:SharedArchiveFile={archive}"])
    dump = _reserve_dump(folder, key)
    if dump is None:
        return ArchivePlan(list(WARNINGS_TO_STDERR))
    if at_exit:
        return ArchivePlan([*WARNINGS_TO_STDERR, f"-XX:ArchiveClassesAtExit={dump}"])
    return ArchivePlan([*WARNINGS_TO_STDERR, "-XX:+RecordDynamicDumpInfo"], dump)


def archive_options(
    java: Path, options: Sequence[str], classpath: Sequence[Path], main_class: str
) -> list[str]:
    """Options to put before ``-cp`` for a short-lived tool: use the archive, or dump one when it exits."""
    return plan(java, options, classpath, main_class, at_exit=True).options


def dump_running(java: Path, pid: int, dump_to: Path) -> None:
    """Have the started JVM ``pid`` write the classes it has loaded to ``dump_to``, in the background (the
    JVM pauses for about a second; the caller goes on at once). A failed dump frees the reservation."""

    def dump() -> None:
        jcmd = java.with_name("jcmd")
        try:
            result = subprocess.run(
                [str(jcmd), str(pid), "VM.cds", "dynamic_dump", str(dump_to)],
                capture_output=True,
                text=True,
                timeout=CHECK_TIMEOUT_S,
                check=False,
            )
            failed = result.returncode != 0 or not dump_to.is_file()
            detail = (result.stdout + result.stderr).strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            failed, detail = True, str(exc)
        if failed:
            log.info("no class-data dump from pid %d: %s", pid, detail)
            dump_to.unlink(missing_ok=True)
            key = dump_to.name.split(".", 1)[0]
            (dump_to.parent / f"{key}.pending").unlink(missing_ok=True)

    threading.Thread(target=dump, name=f"class-data-dump-{pid}", daemon=True).start()
