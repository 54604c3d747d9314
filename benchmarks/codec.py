"""Encode+decode throughput of a SEND_MESSAGE_V2 request with a 1 KiB body, JSON and ROCKETMQ headers.

Run: ``.venv/bin/python -m benchmarks.codec [--seconds 1] [--rounds 5]``. Measures, on one core, the
pure-Python codec and the C accelerator (``rocketmq_wire.accel``; skipped if it is not built) in the same
run, against the plain stdlib baseline (``json.dumps`` + ``json.loads`` of an equivalent dict: what any
Python codec pays at least for JSON). Each figure is measured ``--rounds`` times and its best and median
printed, since a shared machine disturbs single runs. Issue 2's target: 200,000 encode+decode per second per
serialization.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import time
from collections.abc import Callable, Iterator

from rocketmq_wire import LanguageCode, RemotingCommand, SerializeType, accel
from rocketmq_wire.headers import SendMessageRequestHeaderV2

PROPERTIES = (
    "KEYS\x01order-1\x02UNIQ_KEY\x01FD000000000000000000000000000002576C4E0E2F2A6CA6E7D20000"
    "\x02WAIT\x01true\x02TAGS\x01TagA\x02"
)
TARGET = 200_000


def _request(serialize: SerializeType) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="BenchmarkProducerGroup",
        topic="BenchmarkTopic",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=2,
        sys_flag=0,
        born_timestamp=1795314077650,
        flag=0,
        properties=PROPERTIES,
        reconsume_times=0,
        unit_mode=False,
        batch=False,
        broker_name="broker-a",
    )
    return RemotingCommand(
        code=310,
        language=LanguageCode.JAVA,
        opaque=42,
        custom_header=header,
        body=b"x" * 1024,
        serialize_type=serialize,
    )


def _round_trip(cmd: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.decode(cmd.encode())


def _rate(step: Callable[[], object], seconds: float) -> float:
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(1000):
            step()
        count += 1000
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


class Rates:
    """One figure measured in several rounds."""

    def __init__(self, step: Callable[[], object], seconds: float, rounds: int) -> None:
        self.samples = [_rate(step, seconds) for _ in range(rounds)]
        self.best = max(self.samples)
        self.median = statistics.median(self.samples)

    def __str__(self) -> str:
        return f"{self.best:>9,.0f} best {self.median:>9,.0f} median"


@contextlib.contextmanager
def _path(name: str) -> Iterator[None]:
    if name == "pure Python":
        with accel.pure_python():
            yield
    else:
        yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement round")
    parser.add_argument("--rounds", type=int, default=5, help="measurement rounds per figure")
    args = parser.parse_args()

    sample = _request(SerializeType.JSON).encode()
    as_dict = json.loads(sample[8 : 8 + (int.from_bytes(sample[4:8], "big") & 0xFFFFFF)])
    baseline = Rates(lambda: json.loads(json.dumps(as_dict)), args.seconds, args.rounds)
    print(f"stdlib json.dumps+loads of the same header: {baseline} /s (baseline)")
    paths = ["pure Python", "C accelerator"] if accel.ACCELERATED else ["pure Python"]
    if not accel.ACCELERATED:
        print("(the C accelerator is not built or RMQ_NO_SPEEDUPS is set: pure Python only)")
    for serialize in (SerializeType.JSON, SerializeType.ROCKETMQ):
        cmd = _request(serialize)
        frame = cmd.encode()
        both: dict[str, Rates] = {}
        for path in paths:
            with _path(path):
                assert cmd.encode() == frame and RemotingCommand.decode(frame).encode() == frame
                both[path] = Rates(functools.partial(_round_trip, cmd), args.seconds, args.rounds)
                enc = Rates(cmd.encode, args.seconds, args.rounds)
                dec = Rates(functools.partial(RemotingCommand.decode, frame), args.seconds, args.rounds)
            rates = both[path]
            verdict = (
                "meets" if rates.median >= TARGET else ("best meets" if rates.best >= TARGET else "misses")
            )
            print(
                f"{serialize.name:8s} {path:13s} encode+decode: {rates} /s"
                f"  ({rates.median / baseline.median:.2f}x baseline, {verdict} {TARGET:,}/s)"
                f"   encode {enc.median:,.0f} /s   decode {dec.median:,.0f} /s   frame {len(frame)} B"
            )
        if len(both) == 2:
            fast, pure = both["C accelerator"], both["pure Python"]
            print(
                f"{serialize.name:8s} C accelerator / pure Python: {fast.median / pure.median:.1f}x (medians)"
            )


if __name__ == "__main__":
    main()
