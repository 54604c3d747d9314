"""Producer tasks for fault scenarios: unique bodies, no retries, so an acknowledgement means exactly one
stored copy at the (queue, queue offset) it names; and a poll-until helper that checks liveness meanwhile."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Callable, Mapping

from producer import Message, Producer, ProducerError
from rocketmq_wire.message import MessageExt
from tests.integration.cpp_peer.runner import PeerClient

log = logging.getLogger("tests.senders")

#: Back-off of a sender after a failed send, so it does not spin while the broker is down or refusing.
FAILED_SEND_PAUSE_S = 0.02
CONDITION_POLL_S = 0.01
#: Longest wait for a count of acknowledgements (start-up, store recovery, sending).
ACKS_TIMEOUT_S = 15.0
#: Bytes of a body shown in failure messages (the sequence number; the padding is noise).
SHOWN = 15


@dataclasses.dataclass(frozen=True)
class Ack:
    queue_id: int
    queue_offset: int
    body: bytes

    def __str__(self) -> str:
        return f"queue {self.queue_id} @ {self.queue_offset}: {self.body[:SHOWN]!r}"


class Senders:
    """Producer tasks sending bodies ``<prefix>-<seq>:`` (unique, random padding) without retries."""

    def __init__(
        self, producer: Producer, topic: str, rng: random.Random, *, prefix: bytes = b"crash", pad: int = 300
    ) -> None:
        self.producer = producer
        self.prefix = prefix
        self.pad = pad
        self.topic = topic
        self.rng = rng
        self.next_seq = 0
        self.sent: set[bytes] = set()
        self.acks: list[Ack] = []
        self.failures = 0
        #: The last failure's text (what a refusing broker said).
        self.last_failure = ""
        self.errors: list[BaseException] = []
        self.stop = asyncio.Event()

    def _body(self) -> bytes:
        seq = self.next_seq
        self.next_seq += 1
        return self.prefix + b"-%08d:" % seq + self.rng.randbytes(self.rng.randrange(0, self.pad))

    async def run(self) -> None:
        while not self.stop.is_set():
            body = self._body()
            self.sent.add(body)
            try:
                result = await self.producer.send(Message(self.topic, body))
            except (ProducerError, OSError, TimeoutError) as exc:
                self.failures += 1
                self.last_failure = str(exc)
                log.debug("send of %r failed: %r", body[:16], exc)
                await asyncio.sleep(FAILED_SEND_PAUSE_S)
                continue
            except BaseException as exc:  # anything else is a bug: end the test with it
                self.errors.append(exc)
                raise
            self.acks.append(Ack(result.message_queue.queue_id, result.queue_offset, body))

    async def wait_for_acks(self, count: int, what: str, check: Callable[[], None]) -> None:
        """Until ``count`` sends in all have been acknowledged (or a sender failed unexpectedly)."""
        await until(lambda: len(self.acks) >= count or bool(self.errors), ACKS_TIMEOUT_S, what, check)
        assert not self.errors, f"a sender failed: {self.errors!r}"

    async def wait_for_failure(self) -> None:
        """Until one more send has failed than now (the broker is down: sends must fail, not hang)."""
        failed = self.failures
        await until(lambda: self.failures > failed, 5.0, "a send failing while the broker is down")


async def until(
    condition: Callable[[], bool], timeout_s: float, what: str, check: Callable[[], None] | None = None
) -> None:
    """Poll ``condition()`` until it holds (calling ``check()`` each round), or fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if check is not None:
            check()
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not so within {timeout_s:.0f} s")
        await asyncio.sleep(CONDITION_POLL_S)


def check_acknowledged(
    acks: list[Ack],
    stored: list[MessageExt],
    sent: set[bytes],
    *,
    retained_from: Mapping[int, int] | None = None,
) -> dict[int, list[MessageExt]]:
    """Assert what a topic read back from its first offsets holds against what was acknowledged: each
    queue's offsets run contiguously from 0 (from ``retained_from[queue_id]``, the queue's min offset after
    retention deleted files), no body is stored twice or was never sent, and every acknowledged body is at
    its acknowledged (queue, offset) unless retention deleted that offset. Returns the messages by queue."""
    starts = dict(retained_from or {})
    by_queue: dict[int, list[MessageExt]] = {}
    for message in stored:
        by_queue.setdefault(message.queue_id, []).append(message)
    for queue_id, messages in by_queue.items():
        start = starts.get(queue_id, 0)
        offsets = [m.queue_offset for m in messages]
        expected = list(range(start, start + len(messages)))
        assert offsets == expected, f"queue {queue_id}: offsets not contiguous from {start}"
        bodies = [m.body for m in messages]
        assert len(set(bodies)) == len(bodies), f"queue {queue_id} holds a body twice"
    all_bodies = [m.body for m in stored]
    assert len(set(all_bodies)) == len(all_bodies), "a body is stored in two queues (sent once, no retries)"
    assert set(all_bodies) <= sent, "a stored body the test never sent"
    for ack in acks:
        start = starts.get(ack.queue_id, 0)
        if ack.queue_offset < start:
            continue  # deleted by retention
        messages = by_queue.get(ack.queue_id, [])
        index = ack.queue_offset - start
        assert index < len(messages), f"acknowledged {ack} is missing"
        found = messages[index].body
        assert found == ack.body, f"acknowledged {ack} is not there: {found[:SHOWN]!r} is"
    return by_queue


def check_java_reads(java: PeerClient, namesrv: str, topic: str, stored: list[MessageExt]) -> int:
    """Apache's Java consumer pulls ``topic`` from offset 0 and must find exactly what the project's reader
    found, message for message at the same (queue, offset); returns how many it read."""
    result = java.pull_consume(namesrv, f"java-{topic}"[:120], topic, count=len(stored), timeout=60.0)
    got = sorted((m.queue_id, m.queue_offset, m.body) for m in result.messages())
    want = sorted((m.queue_id, m.queue_offset, m.body) for m in stored)
    assert got == want, f"Apache's Java consumer read {len(got)} messages, the project's reader {len(want)}"
    return len(got)
