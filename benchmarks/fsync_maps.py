"""fdatasync after small appends to a file written through a map, by how far the file is written.

    .venv/bin/python -m benchmarks.fsync_maps [--size-mib 64] [--step-mib 8] [--append 5000] [--dir /tmp]

The store writes commit-log, consume-queue and index files through shared maps and, under SYNC_FLUSH,
fdatasyncs the commit log every few KiB (one group commit). Each row appends ``--append`` bytes at a time
to a fresh file of ``--size-mib`` MiB (blocks reserved 1 MiB ahead, as ``broker.store.segment`` does) and
fdatasyncs after each append; printed is the mean fdatasync per ``--step-mib`` of the file:

* ``map``: written through a map with the kernel's default readahead on faults;
* ``map, MADV_RANDOM``: the same with the hint the store's maps carry (``segment.advise_no_readahead``);
* ``pwrite``: no map (the reference: only the appended pages are ever dirty).

Where the kernel builds large folios for a mapped file, a write fault with readahead brings a large folio
in and every fdatasync afterwards writes all of it back, so the first row slows down once the file is
written past a few tens of MiB; the hint keeps each fault to one page.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import tempfile
import time

RESERVE_AHEAD = 1 << 20


def run(directory: str, size: int, step: int, append: int, how: str) -> list[float]:
    """Mean fdatasync in microseconds for each ``step`` bytes of the file."""
    fd, path = tempfile.mkstemp(dir=directory, prefix="fsync-maps-")
    means: list[float] = []
    try:
        os.ftruncate(fd, size)
        mapped = None if how == "pwrite" else mmap.mmap(fd, size)
        if mapped is not None and how == "map, MADV_RANDOM":
            mapped.madvise(mmap.MADV_RANDOM)
        data = b"x" * append
        reserved = position = 0
        took: list[float] = []
        report_at = step
        while position + append <= size:
            end = position + append
            if end > reserved:
                target = min(size, max(end, reserved + RESERVE_AHEAD))
                os.posix_fallocate(fd, reserved, target - reserved)
                reserved = target
            if mapped is None:
                os.pwrite(fd, data, position)
            else:
                mapped[position:end] = data
            position = end
            started = time.perf_counter()
            os.fdatasync(fd)
            took.append(time.perf_counter() - started)
            if position >= report_at:
                means.append(statistics.fmean(took) * 1e6)
                took.clear()
                report_at += step
        if took:  # the file's last step, short of a whole append
            means.append(statistics.fmean(took) * 1e6)
        if mapped is not None:
            mapped.close()
    finally:
        os.close(fd)
        os.unlink(path)
    return means


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--step-mib", type=int, default=8)
    parser.add_argument("--append", type=int, default=5000, help="bytes appended before each fdatasync")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the test files go")
    args = parser.parse_args()
    size, step = args.size_mib << 20, args.step_mib << 20
    print(
        f"mean fdatasync (us) after each {args.append} B append, per {args.step_mib} MiB written "
        f"(in {args.dir})"
    )
    print(f"{'':<18}" + "".join(f"{(i + 1) * args.step_mib:>7} MiB" for i in range(size // step)))
    for how in ("map", "map, MADV_RANDOM", "pwrite"):
        means = run(args.dir, size, step, args.append, how)
        print(f"{how:<18}" + "".join(f"{mean:>11,.0f}" for mean in means))


if __name__ == "__main__":
    main()
