"""Encode+decode throughput of a SEND_MESSAGE_V2 request with a 1 KiB body, JSON and ROCKETMQ headers.

Run: ``.venv/bin/python benchmarks/codec.py [--seconds 3]``. Prints one line per serialization with the
round trips per second on one core, and the ratio against the plain stdlib baseline measured in the same run
(``json.dumps`` + ``json.loads`` of an equivalent dict: what any Python codec pays at least for JSON).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from rocketmq_wire import LanguageCode, RemotingCommand, SerializeType
from rocketmq_wire.headers import SendMessageRequestHeaderV2

PROPERTIES = (
    "KEYS\x01order-1\x02UNIQ_KEY\x01FD000000000000000000000000000002576C4E0E2F2A6CA6E7D20000"
    "\x02WAIT\x01true\x02TAGS\x01TagA\x02"
)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    args = parser.parse_args()

    sample = _request(SerializeType.JSON)
    as_dict = json.loads(sample.encode()[8 : 8 + (int.from_bytes(sample.encode()[4:8], "big") & 0xFFFFFF)])
    baseline = _rate(lambda: json.loads(json.dumps(as_dict)), args.seconds)
    print(f"stdlib json.dumps+loads of the same header: {baseline:>10,.0f} /s (baseline)")
    for serialize in (SerializeType.JSON, SerializeType.ROCKETMQ):
        cmd = _request(serialize)
        frame = cmd.encode()
        assert RemotingCommand.decode(frame).encode() == frame
        both = _rate(lambda cmd=cmd: RemotingCommand.decode(cmd.encode()), args.seconds)
        enc = _rate(cmd.encode, args.seconds)
        dec = _rate(lambda frame=frame: RemotingCommand.decode(frame), args.seconds)
        print(
            f"{serialize.name:8s} encode+decode: {both:>10,.0f} /s  ({both / baseline:.2f}x baseline)"
            f"   encode {enc:,.0f} /s   decode {dec:,.0f} /s   frame {len(frame)} B"
        )


if __name__ == "__main__":
    main()
