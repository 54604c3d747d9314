"""Where the integration suite keeps what it fetches or builds: jars, compiled peers, the Docker image's root.

``RMQ_IT_CACHE`` overrides the default ``~/.cache/rocketmq-toolkit-it``; it is never inside the work tree, so
no Apache jar can end up committed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

CACHE_ENV = "RMQ_IT_CACHE"
#: Set (to 1) in CI: a peer that cannot run fails its tests instead of skipping them.
REQUIRE_ENV = "ROCKETMQ_REQUIRE_PEERS"


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    root = Path(configured) if configured else Path.home() / ".cache" / "rocketmq-toolkit-it"
    root.mkdir(parents=True, exist_ok=True)
    return root


def turned_off(env: str) -> bool:
    """True when the switch ``env`` (on by default) is set to 0, false or no."""
    return os.environ.get(env, "1") in ("0", "false", "no")


def peers_required() -> bool:
    """True when a missing peer is a failure (CI), not a skip (a user's machine without Java, say)."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0", "false", "no")


def content_hash(paths: Iterable[Path], *extra: str) -> str:
    """A short digest of files' contents (and ``extra`` strings): cached builds are keyed by their inputs."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    for text in extra:
        digest.update(text.encode())
    return digest.hexdigest()[:16]
