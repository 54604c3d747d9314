"""The Docker images the ``docker`` provider runs, built on this machine: no registry is ever asked.

Two images, both reused once they exist in the engine:

* :func:`base_image` -- ``rocketmq-toolkit-it/debian-jre17:<tag>``: Debian bookworm made with ``debootstrap
  --variant=minbase --include=openjdk-17-jre-headless`` into ``<cache>/rootfs-<tag>`` (kept, so a fresh engine
  only needs the import) and imported with ``docker import`` (the tar streamed through the engine's API). The
  tag is a digest of that recipe. Making the root takes root (debootstrap), about half a minute and ~100 MB
  from the Debian mirror (``RMQ_IT_DEBIAN_MIRROR``, default ``http://deb.debian.org/debian``).
* :func:`apache_image` -- ``rocketmq-toolkit-it/apache-rocketmq:<version>-<digest>``: the project's
  ``tests/integration/docker/Dockerfile`` on that base, with Apache's server jars (resolved from Maven Central
  by :mod:`tests.integration.apache.maven`) and the suite's logback configurations in a build context under
  ``<cache>/docker/``; the digest covers the Dockerfile, the configurations, the base image and the jar names.

Anything missing (no engine, no root to run debootstrap, no mirror, no Maven) raises
:class:`~tests.integration.clusters.model.ProviderUnavailable` saying exactly what; builds are serialised
between processes with file locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from tests.integration.apache import jvm, maven
from tests.integration.apache.cache import cache_root, content_hash
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.model import ProviderUnavailable

log = logging.getLogger("tests.clusters.docker_image")

P = ParamSpec("P")
R = TypeVar("R")

BASE_REPOSITORY = "rocketmq-toolkit-it/debian-jre17"
APACHE_REPOSITORY = "rocketmq-toolkit-it/apache-rocketmq"
DOCKERFILE = Path(__file__).resolve().parents[1] / "docker" / "Dockerfile"
SUITE = "bookworm"
PACKAGES = ("openjdk-17-jre-headless",)
MIRROR_ENV = "RMQ_IT_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: Where the image keeps things; :mod:`.apache_docker` builds its command lines from these.
ROCKETMQ_HOME = "/opt/rocketmq"
LIB_DIR = f"{ROCKETMQ_HOME}/lib"
USER_HOME = "/home/rocketmq"
DEBOOTSTRAP_TIMEOUT_S = 900.0
APT_TIMEOUT_S = 300.0
#: The engine's answers while it imports a root or builds (one read may wait for the whole layer commit).
BUILD_TIMEOUT_S = 900
STREAM_CHUNK = 1 << 20
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def docker_sdk() -> Any:
    """docker-py (testcontainers' dependency), imported here because it ships no type information."""
    try:
        docker = importlib.import_module("docker")
        importlib.import_module("docker.errors")
    except ImportError as exc:
        raise ProviderUnavailable(
            f"PyPI package {exc.name} not installed (pip install -e '.[test]')"
        ) from exc
    return docker


@contextlib.contextmanager
def engine(timeout_s: int = 60) -> Iterator[Any]:
    """A docker-py client of the engine ``DOCKER_HOST`` (or the default socket) names, closed afterwards."""
    docker = docker_sdk()
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
    except Exception as exc:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise ProviderUnavailable(f"no Docker engine answers at {where}: {exc}") from exc
    try:
        yield client
    finally:
        client.close()


def image_exists(client: Any, name: str) -> bool:
    docker = docker_sdk()
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.APIError as exc:
        raise ProviderUnavailable(f"the Docker engine could not inspect image {name}: {exc}") from exc
    return True


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """An exclusive file lock under ``<cache>/docker`` (another test process may build the same image)."""
    folder = cache_root() / "docker"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# --- the base image --------------------------------------------------------------------------------------


def _recipe() -> list[str]:
    """debootstrap's arguments before the target folder (the mirror is not part of the image's identity)."""
    return ["--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE]


def base_tag() -> str:
    return f"{SUITE}-" + hashlib.sha256(" ".join(["debootstrap", *_recipe()]).encode()).hexdigest()[:12]


def base_image_name() -> str:
    return f"{BASE_REPOSITORY}:{base_tag()}"


def _reported(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Turn what the file system, a subprocess or the engine raises into :class:`ProviderUnavailable`."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except ProviderUnavailable:
                raise
            except (OSError, subprocess.SubprocessError) as exc:  # requests' errors are OSErrors too
                raise ProviderUnavailable(f"{what}: {type(exc).__name__}: {exc}") from exc
            except Exception as exc:
                if isinstance(exc, docker_sdk().errors.DockerException):
                    raise ProviderUnavailable(f"{what}: {type(exc).__name__}: {exc}") from exc
                raise

        return wrapper

    return decorate


@_reported("making the base Docker image")
def base_image() -> str:
    """The base image's name, importing it (and making its root with debootstrap) when the engine lacks it."""
    name = base_image_name()
    with engine() as client:
        if image_exists(client, name):
            return name
        with _locked("base"):
            if image_exists(client, name):  # another process made it while we waited
                return name
            rootfs = cache_root() / f"rootfs-{base_tag()}"
            if not rootfs.is_dir():
                _debootstrap(rootfs)
            _import(client, rootfs, name)
    return name


def _is_root() -> bool:
    return os.geteuid() == 0


def _debootstrap_command() -> str:
    """debootstrap's path, installing Debian's package when it is missing and we may (root, apt-get)."""
    for found in (shutil.which("debootstrap"), "/usr/sbin/debootstrap"):
        if found and os.access(found, os.X_OK):
            return found
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        raise ProviderUnavailable("debootstrap is not installed and there is no apt-get to install it")
    log.info("installing debootstrap with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    argv = [apt_get, "install", "-y", "-q", "--no-install-recommends", "debootstrap"]
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ProviderUnavailable(f"apt-get install debootstrap took over {APT_TIMEOUT_S:.0f} s") from exc
    if result.returncode != 0 or not os.access("/usr/sbin/debootstrap", os.X_OK):
        tail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
        raise ProviderUnavailable(f"apt-get install debootstrap failed (exit {result.returncode}): {tail[0]}")
    return "/usr/sbin/debootstrap"


def _mounts_under(folder: Path) -> list[str]:
    """Mount points inside ``folder`` (debootstrap mounts /proc and /sys in its target while it works)."""
    prefix = str(folder.resolve()) + "/"
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1]
    return sorted((p for p in points if p.startswith(prefix)), reverse=True)


def _remove_partial(folder: Path) -> None:
    """Remove a half-made root, unmounting what a killed debootstrap left mounted in it first (removing
    files through a mounted /proc or /sys would reach the host's)."""
    if not folder.exists():
        return
    for point in _mounts_under(folder):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False, timeout=60)
    left = _mounts_under(folder)
    if left:
        raise ProviderUnavailable(f"cannot remove {folder}: still mounted: {', '.join(left)}")
    shutil.rmtree(folder)


def _debootstrap(rootfs: Path) -> None:
    if not _is_root():
        raise ProviderUnavailable(
            f"Docker image {base_image_name()} is missing and making it needs root (debootstrap); "
            "run the suite once as root"
        )
    command = _debootstrap_command()
    partial = rootfs.with_name(rootfs.name + ".partial")
    _remove_partial(partial)
    mirror = os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR
    argv = [command, *_recipe(), str(partial), mirror]
    log_path = rootfs.with_name(rootfs.name + ".log")
    log.info("making the base image's root: %s (log %s)", " ".join(argv), log_path)
    started = time.monotonic()
    with log_path.open("wb") as output:
        # A session of its own: on a timeout the whole group (dpkg, apt, the chroot's scripts) is killed.
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = process.wait(DEBOOTSTRAP_TIMEOUT_S)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            with contextlib.suppress(ProviderUnavailable, OSError):
                _remove_partial(partial)
            raise ProviderUnavailable(
                f"debootstrap did not finish within {DEBOOTSTRAP_TIMEOUT_S:.0f} s (log {log_path})"
            ) from None
    if code != 0:
        lines = log_path.read_text("utf-8", "replace").strip().splitlines()
        last = next(
            (line for line in reversed(lines) if line.startswith(("E:", "W:"))), lines[-1] if lines else ""
        )
        with contextlib.suppress(ProviderUnavailable, OSError):
            _remove_partial(partial)
        raise ProviderUnavailable(
            f"debootstrap {SUITE} from {mirror} failed (exit {code}): {last} (log {log_path})"
        )
    # Downloaded packages and package lists are no use inside the image (about 140 MB).
    for leftover in [*partial.glob("var/cache/apt/archives/*.deb"), *partial.glob("var/lib/apt/lists/*_*")]:
        leftover.unlink()
    partial.rename(rootfs)
    log.info("made %s in %.1f s", rootfs, time.monotonic() - started)


def _import(client: Any, rootfs: Path, name: str) -> None:
    """``tar -C rootfs -c . | docker import - name``, the tar streamed to the engine by docker-py."""
    repository, tag = name.rsplit(":", 1)
    started = time.monotonic()
    tar = subprocess.Popen(
        ["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None and tar.stderr is not None
    stdout = tar.stdout
    chunks = iter(lambda: stdout.read(STREAM_CHUNK), b"")
    docker = docker_sdk()
    try:
        with engine(BUILD_TIMEOUT_S) as slow:
            slow.api.import_image(
                src=chunks, repository=repository, tag=tag, stream_src=True, changes=[f"ENV PATH={_PATH}"]
            )
    except docker.errors.DockerException as exc:
        raise ProviderUnavailable(f"the Docker engine refused to import {rootfs} as {name}: {exc}") from exc
    finally:
        stdout.close()
        tar.kill()
        error = tar.stderr.read().decode("utf-8", "replace").strip()
        tar.stderr.close()
        tar.wait()
    if tar.returncode not in (0, -signal.SIGKILL) or not image_exists(client, name):
        raise ProviderUnavailable(
            f"importing {rootfs} as {name} failed: {error or 'image missing afterwards'}"
        )
    log.info("imported %s as %s in %.1f s", rootfs, name, time.monotonic() - started)


# --- the Apache image ------------------------------------------------------------------------------------


def _jars(release: ApacheRelease) -> tuple[Path, ...]:
    jars = maven.classpath("servers", release.version)
    names: dict[str, Path] = {}
    for jar in jars:
        if jar.name in names and names[jar.name] != jar:
            raise ProviderUnavailable(
                f"Apache RocketMQ {release.version}: two jars named {jar.name} ({names[jar.name]}, {jar}) "
                "cannot share the image's lib folder"
            )
        names[jar.name] = jar
    return tuple(names.values())


def _place(source: Path, target: Path) -> None:
    """Hard-link ``source`` to ``target`` (the cache is one file system), copying when that fails."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


@_reported("building the Apache RocketMQ Docker image")
def apache_image(release: ApacheRelease) -> str:
    """The name of the image of ``release``'s NameServer and Broker, building it when the engine lacks it
    (and the base image first, when that is missing too)."""
    if not DOCKERFILE.is_file():
        raise ProviderUnavailable(f"{DOCKERFILE} is missing")
    jars = _jars(release)
    base = base_image_name()
    folder = cache_root() / "docker"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix="conf-") as scratch:
        conf = jvm.rocketmq_home(Path(scratch)) / "conf"
        confs = sorted(conf.iterdir())
        digest = content_hash([DOCKERFILE, *confs], base, *sorted(jar.name for jar in jars))
        name = f"{APACHE_REPOSITORY}:{release.version}-{digest}"
        with engine() as client:
            if image_exists(client, name):
                return name
            with _locked(f"apache-{release.version}"):
                if image_exists(client, name):
                    return name
                base_image()
                context = folder / f"apache-{release.version}-{digest}"
                _assemble(context, jars, confs)
                _build(context, name, base)
                if not image_exists(client, name):
                    raise ProviderUnavailable(f"docker build reported success but there is no image {name}")
                for stale in folder.glob(f"apache-{release.version}-*"):
                    if stale != context and stale.is_dir():
                        shutil.rmtree(stale, ignore_errors=True)
    return name


def _assemble(context: Path, jars: tuple[Path, ...], confs: list[Path]) -> None:
    """The build context: Dockerfile, ``lib/`` (the jars), ``conf/`` (logback), ``home/`` (empty)."""
    if context.exists():
        shutil.rmtree(context)
    for sub in ("lib", "conf", "home"):
        (context / sub).mkdir(parents=True)
    shutil.copyfile(DOCKERFILE, context / "Dockerfile")
    for file in confs:
        shutil.copyfile(file, context / "conf" / file.name)
    try:
        for jar in jars:
            _place(jar, context / "lib" / jar.name)
    except OSError as exc:
        raise ProviderUnavailable(f"cannot put the jars into the build context {context}: {exc}") from exc


def _build(context: Path, name: str, base: str) -> None:
    docker = docker_sdk()
    started = time.monotonic()
    log.info("building %s from %s", name, context)
    lines: list[str] = []
    try:
        with engine(BUILD_TIMEOUT_S) as slow:
            # The engine's own (classic) builder: no BuildKit, and pull=False so FROM takes the local base.
            for chunk in slow.api.build(
                path=str(context),
                tag=name,
                buildargs={"BASE_IMAGE": base},
                pull=False,
                rm=True,
                forcerm=True,
                network_mode="none",
                decode=True,
            ):
                if "error" in chunk:
                    raise ProviderUnavailable(f"docker build of {name} failed: {str(chunk['error']).strip()}")
                text = str(chunk.get("stream", "")).strip()
                if text:
                    lines.append(text)
                    log.debug("build %s: %s", name, text)
    except docker.errors.DockerException as exc:
        tail = "; ".join(lines[-3:])
        raise ProviderUnavailable(f"docker build of {name} failed: {exc} {tail}".strip()) from exc
    log.info("built %s in %.1f s", name, time.monotonic() - started)
