"""``ConsumeQueue.put`` per entry: what the send path pays for each message's 20-byte consume-queue entry.

    .venv/bin/python -m benchmarks.consume_queue_put [--entries 200000] [--rounds 5] [--dir /tmp]

Consume-queue files are opened on demand and kept in a bounded cache of open files (see
:mod:`broker.store.segment`); a write to a file the cache holds must cost no more than it did when every
file stayed open. Each row puts ``--entries`` entries (best of ``--rounds``) into a fresh queue table:

* ``1 queue``: every put goes to the same file, the common case of a hot queue;
* ``64 queues, round robin``: a busy broker's spread, all of them in the cache;
* ``N queues > bound``: round robin over more queues than the cache holds, so every put re-opens its file
  (the worst case; only printed where the queue table takes a bound, ``--max-open``).

Printed is nanoseconds per put. On a build without the bound (before the cache) the last row is skipped,
so the same script measures both sides of the change.
"""

from __future__ import annotations

import argparse
import inspect
import tempfile
import time
from pathlib import Path

# Run as a script, this folder comes first on the import path, and its broker.py would shadow the package.
from broker.store.queue_table import QueueTable


def _table(root: Path, max_open: int | None) -> QueueTable:
    if max_open is not None and "max_open_files" in inspect.signature(QueueTable).parameters:
        return QueueTable(root, 300_000, max_open_files=max_open)  # type: ignore[call-arg,unused-ignore]
    return QueueTable(root, 300_000)


def run(directory: str, entries: int, queues: int, max_open: int | None) -> float:
    """Nanoseconds per put of ``entries`` puts spread round robin over ``queues`` queues."""
    with tempfile.TemporaryDirectory(dir=directory, prefix="cq-put-") as root:
        table = _table(Path(root), max_open)
        targets = [table.get_or_create("BenchTopic", queue_id) for queue_id in range(queues)]
        for queue in targets:  # create every file first: the loop below measures writes, not creation
            queue.put(0, 0, 100, 0)
        per_queue = entries // queues
        started = time.perf_counter_ns()
        for offset in range(1, per_queue + 1):
            physical = offset * 100
            for queue in targets:
                queue.put(offset, physical, 100, 7)
        took = time.perf_counter_ns() - started
        table.close()
    return took / (per_queue * queues)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=200_000, help="puts per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per row; the best is printed")
    parser.add_argument("--max-open", type=int, default=64, help="the cache's bound in the last row")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the queue files go")
    args = parser.parse_args()
    bounded = "max_open_files" in inspect.signature(QueueTable).parameters
    rows: list[tuple[str, int, int | None]] = [
        ("1 queue", 1, None),
        ("64 queues, round robin", 64, None),
    ]
    if bounded:
        rows.append((f"{args.max_open * 4} queues > bound {args.max_open}", args.max_open * 4, args.max_open))
    print(f"ConsumeQueue.put, ns per entry (best of {args.rounds}, {args.entries} puts, in {args.dir})")
    for name, queues, max_open in rows:
        best = min(run(args.dir, args.entries, queues, max_open) for _ in range(args.rounds))
        print(f"{name:<32}{best:>10,.0f}")


if __name__ == "__main__":
    main()
