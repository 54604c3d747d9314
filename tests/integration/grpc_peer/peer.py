"""Apache's Python gRPC SDK (PyPI ``rocketmq-python-client``) as a test peer, run by its own interpreter.

The SDK installs the import name ``rocketmq``, which PyPI's C++ client (another peer) uses too, so it lives in
a virtual environment of its own (:mod:`tests.integration.grpc_peer.runner`) and this script is run there. It
reaches a cluster only through Apache's Proxy (its gRPC endpoint), and prints one JSON object per line:
``sent``/``rolled_back``/``received``/``error`` events and a final ``done``.

Commands:
  send     --endpoints E --topic T --kind normal|fifo|delay|transaction --count N [--delay-ms D]
           (transaction: one message rolled back first, then N committed)
  simple   --endpoints E --topic T --group G --count N --timeout S     (SimpleConsumer: receive + ack)
  push     --endpoints E --topic T --group G --count N --timeout S     (PushConsumer: listener)
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

from rocketmq import (  # type: ignore[import-not-found]
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    Producer,
    PushConsumer,
    SimpleConsumer,
)
from rocketmq.grpc_protocol import TransactionResolution  # type: ignore[import-not-found]
from rocketmq.v5.consumer import MessageListener  # type: ignore[import-not-found]
from rocketmq.v5.producer import TransactionChecker  # type: ignore[import-not-found]

_print_lock = threading.Lock()
#: Body of the transactional message that is rolled back, before the committed ones: no consumer may see it.
ROLLBACK_BODY = "grpc transaction rollback"


def emit(event: str, **fields: Any) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
        sys.stdout.flush()


def config(endpoints: str) -> Any:
    return ClientConfiguration(endpoints, Credentials(), request_timeout=10)


class CommitAll(TransactionChecker):  # type: ignore[misc]
    """Orphaned halves (none expected: every transaction is settled at once) are settled on a check as their
    body says: the rolled-back one stays rolled back."""

    def check(self, message: Any) -> Any:
        if message.body == ROLLBACK_BODY.encode():
            return TransactionResolution.ROLLBACK
        return TransactionResolution.COMMIT


def send(args: argparse.Namespace) -> int:
    checker = CommitAll() if args.kind == "transaction" else None
    producer = Producer(config(args.endpoints), (args.topic,), checker)
    producer.startup()
    try:
        if args.kind == "transaction":
            _send_rollback(producer, args.topic)
        for i in range(args.count):
            message = Message()
            message.topic = args.topic
            message.body = f"grpc {args.kind} {i}".encode()
            message.tag = "grpc"
            message.keys = f"{args.kind}-{i}"
            if args.kind == "fifo":
                message.message_group = f"group-{i % 2}"
            due_ms = None
            if args.kind == "delay":
                # The SDK documents milliseconds but writes the value into the protobuf Timestamp's seconds
                # (5.1.2), which the proxy refuses for a millisecond figure: whole seconds it is.
                due_s = int(time.time() + args.delay_ms / 1000) + 1
                message.delivery_timestamp = due_s
                due_ms = due_s * 1000
            try:
                if args.kind == "transaction":
                    transaction = producer.begin_transaction()
                    receipt = producer.send(message, transaction)
                    transaction.commit()
                else:
                    receipt = producer.send(message)
            except Exception as exc:
                emit("error", index=i, error=f"{type(exc).__name__}: {exc}")
                continue
            emit("sent", index=i, message_id=receipt.message_id, at_ms=int(time.time() * 1000), due_ms=due_ms)
    finally:
        producer.shutdown()
    emit("done", command="send")
    return 0


def _send_rollback(producer: Any, topic: str) -> None:
    message = Message()
    message.topic = topic
    message.body = ROLLBACK_BODY.encode()
    message.tag = "grpc"
    message.keys = "transaction-rollback"
    try:
        transaction = producer.begin_transaction()
        receipt = producer.send(message, transaction)
        transaction.rollback()
    except Exception as exc:
        emit("error", index=-1, error=f"{type(exc).__name__}: {exc}")
        return
    emit("rolled_back", message_id=receipt.message_id)


def _received(message: Any, how: str) -> None:
    emit(
        "received",
        how=how,
        body=message.body.decode("utf-8", "replace"),
        message_id=message.message_id,
        group=message.message_group,
        attempt=message.delivery_attempt,
        at_ms=int(time.time() * 1000),
    )


def simple(args: argparse.Namespace) -> int:
    consumer = SimpleConsumer(
        config(args.endpoints), args.group, {args.topic: FilterExpression("*")}, await_duration=5
    )
    consumer.startup()
    seen = 0
    deadline = time.monotonic() + args.timeout
    try:
        while seen < args.count and time.monotonic() < deadline:
            try:
                messages = consumer.receive(16, 30)
            except Exception as exc:
                emit("poll_error", error=f"{type(exc).__name__}: {exc}")
                time.sleep(0.5)
                continue
            for message in messages or []:
                consumer.ack(message)
                _received(message, "simple")
                seen += 1
    finally:
        consumer.shutdown()
    emit("done", command="simple", count=seen)
    return 0


class Collect(MessageListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def consume(self, message: Any) -> Any:
        _received(message, "push")
        with self.lock:
            self.count += 1
        return ConsumeResult.SUCCESS


def push(args: argparse.Namespace) -> int:
    listener = Collect()
    consumer = PushConsumer(config(args.endpoints), args.group, listener, {args.topic: FilterExpression("*")})
    consumer.startup()
    deadline = time.monotonic() + args.timeout
    try:
        while listener.count < args.count and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # let the last acks reach the proxy before the consumer goes
    finally:
        consumer.shutdown()
    emit("done", command="push", count=listener.count)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grpc-peer")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("send", "simple", "push"):
        one = sub.add_parser(name)
        one.add_argument("--endpoints", required=True)
        one.add_argument("--topic", required=True)
        one.add_argument("--count", type=int, default=1)
        if name == "send":
            one.add_argument("--kind", choices=("normal", "fifo", "delay", "transaction"), default="normal")
            one.add_argument("--delay-ms", type=int, default=3000)
        else:
            one.add_argument("--group", required=True)
            one.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    return {"send": send, "simple": simple, "push": push}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
