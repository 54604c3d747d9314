"""Loading the captured Apache frames in ``../shared/golden`` for tests.

The frames are data owned by the project's steering repo, not copied here; tests that need them skip with a
reason naming the missing folder.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from pathlib import Path

import pytest

GOLDEN_DIR = Path(
    os.environ.get("RMQ_GOLDEN_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "golden")
)
CAPTURES = ("java498-json", "java498-rocketmq", "java533-json", "java533-rocketmq")


@dataclasses.dataclass(frozen=True)
class GoldenFrame:
    id: str
    capture: str
    server: str
    direction: str
    connection: int
    serialize: str
    kind: str
    code: int
    opaque: int
    language: str
    frame: bytes

    @property
    def header_length(self) -> int:
        return int.from_bytes(self.frame[4:8], "big") & 0xFFFFFF

    @property
    def body(self) -> bytes:
        return self.frame[8 + self.header_length :]

    @property
    def from_java(self) -> bool:
        return self.language == "JAVA"


@functools.cache
def load_golden() -> tuple[GoldenFrame, ...]:
    """Every captured frame, in capture order; skips the calling test (or module, when called while it is
    collected) if the folder is absent."""
    if not GOLDEN_DIR.is_dir():
        pytest.skip(
            f"golden frames not found: {GOLDEN_DIR} is missing (it lives in shared/golden beside the repo)",
            allow_module_level=True,  # a module that reads them to parametrize is skipped whole
        )
    frames: list[GoldenFrame] = []
    for capture in CAPTURES:
        path = GOLDEN_DIR / f"{capture}.jsonl"
        if not path.is_file():
            pytest.skip(f"golden capture {path} is missing", allow_module_level=True)
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                frames.append(
                    GoldenFrame(
                        id=row["id"],
                        capture=capture,
                        server=row["server"],
                        direction=row["direction"],
                        connection=row["connection"],
                        serialize=row["serialize"],
                        kind=row["kind"],
                        code=row["code"],
                        opaque=row["opaque"],
                        language=row["language"],
                        frame=bytes.fromhex(row["hex"]),
                    )
                )
    return tuple(frames)


def request_of(response: GoldenFrame) -> GoldenFrame | None:
    """The request a response answers: same capture, connection and opaque, sent before it."""
    best = None
    for f in load_golden():
        if f is response:
            break
        if (
            f.capture == response.capture
            and f.connection == response.connection
            and f.opaque == response.opaque
            and f.kind == "request"
        ):
            best = f
    return best


def golden_ids(frames: tuple[GoldenFrame, ...]) -> list[str]:
    return [f.id for f in frames]
