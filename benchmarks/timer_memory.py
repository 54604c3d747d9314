"""Memory of the broker's pending-timer index: what 10^6 (``--timers``) waiting timer messages cost.

Builds the index the broker keeps (:class:`broker.timer_index.TimerIndex`) with timers spread at random
over the default ``timerMaxDelaySec`` (3 days) at the default ``timerPrecisionMs`` (1 s), as a loaded
broker would hold them, and the durable log's bitmap of handled offsets (:mod:`broker.store.timer_log`)
for as many offsets; measured with ``tracemalloc`` (Python allocations, which is where the index lives).
The timer messages themselves are in the commit log, on disk and in the page cache, not in this figure.

    .venv/bin/python -m benchmarks.timer_memory [--timers 1000000] [--span-sec 259200] [--precision-ms 1000]

Prints the total, the bytes per timer, and how long building the index took.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from broker.store.timer_log import TimerLog
from broker.timer_index import TimerIndex

log = logging.getLogger("benchmarks.timer_memory")


def measure(timers: int, span_sec: int, precision_ms: int, seed: int = 7) -> dict[str, float]:
    rng = random.Random(seed)
    slots = max(1, span_sec * 1000 // precision_ms)
    base = 1_700_000_000_000
    # The slots to use are drawn before measuring, so the figure is the index's, not the generator's.
    chosen = [base + rng.randrange(slots) * precision_ms for _ in range(timers)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    index = TimerIndex()
    for offset, slot in enumerate(chosen):
        index.add(slot, offset)
    built_s = time.perf_counter() - started
    index_bytes = tracemalloc.get_traced_memory()[0] - before
    with tempfile.TemporaryDirectory() as directory:
        progress = TimerLog(Path(directory), sync=False)
        progress.open()
        mark = tracemalloc.get_traced_memory()[0]
        for offset in range(0, timers, 1000):
            progress.mark_done(list(range(offset, min(timers, offset + 1000), 2)))
        bitmap_bytes = tracemalloc.get_traced_memory()[0] - mark
        progress.close()
    tracemalloc.stop()
    assert len(index) == timers
    return {
        "timers": timers,
        "slots": index.slot_count,
        "index_bytes": index_bytes,
        "bitmap_bytes": bitmap_bytes,
        "build_s": built_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timers", type=int, default=1_000_000, help="pending timers to index")
    parser.add_argument("--span-sec", type=int, default=3 * 24 * 3600, help="spread of delivery times")
    parser.add_argument("--precision-ms", type=int, default=1000, help="timerPrecisionMs")
    args = parser.parse_args(argv)
    figures = measure(args.timers, args.span_sec, args.precision_ms)
    total = figures["index_bytes"] + figures["bitmap_bytes"]
    sys.stdout.write(
        f"{figures['timers']:.0f} pending timers in {figures['slots']:.0f} slots: "
        f"index {figures['index_bytes'] / 2**20:.1f} MiB, handled-offset bitmap "
        f"{figures['bitmap_bytes'] / 2**20:.2f} MiB, total {total / 2**20:.1f} MiB "
        f"({total / figures['timers']:.1f} bytes per timer); built in {figures['build_s']:.2f} s\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
