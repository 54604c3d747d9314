"""How often a Spark write fails when the broker applies flow control: the failure rate over many runs.

The case users met: ``df.repartition(4).write.format("rocketmq")`` of 500 rows into an Apache broker on a
busy 2-core machine (another process using one core), where the broker answers SYSTEM_BUSY
(``[TIMEOUT_CLEAN_QUEUE]``) to sends that waited longer than ``waitTimeMillsInSendQueue`` in its queue.
Each run writes to a new topic; a run fails when ``save()`` raises. After the runs, the messages the broker
holds are counted: every successful run's rows once, a failed run's acknowledged rows at most.

    .venv/bin/python -m benchmarks.flow_control [--setup binaries-4.9.7] [--runs 20] [--rows 500]
        [--partitions 4] [--wait-ms 200] [--no-busy-core]

To measure another version of the connector and producer (e.g. before a change), run the module from the
root of that checkout, with this script copied in: the current folder comes first on the import path, and
Spark's Python workers inherit it. The script prints which ``producer`` package it used.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._clusters import busy_core, create_topic, provider_cluster, stored_count, update_brokers

#: Apache's (and the project's broker's) default ``waitTimeMillsInSendQueue``.
APACHE_DEFAULT_WAIT_MS = 200


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--setup", default="binaries-4.9.7", help="an integration set-up id (python, binaries-V)"
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--wait-ms",
        type=int,
        default=APACHE_DEFAULT_WAIT_MS,
        help="the brokers' waitTimeMillsInSendQueue (set live)",
    )
    parser.add_argument("--no-busy-core", action="store_true", help="no second process using a core")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import producer
    from spark_connector import read_summaries
    from spark_connector.testing import local_spark, spark_unavailable_reason

    missing = spark_unavailable_reason()
    if missing is not None:
        sys.exit(f"cannot run: {missing}")
    print(f"producer package: {os.path.dirname(producer.__file__)}")
    failures: list[str] = []
    acknowledged_runs = 0
    busy_answers = resends = 0
    smallest = None
    with provider_cluster(args.setup) as cluster, tempfile.TemporaryDirectory() as scratch:
        namesrv = cluster.namesrv  # type: ignore[attr-defined]
        addrs = [b.addr for b in cluster.brokers]  # type: ignore[attr-defined]
        # Always set: the integration set-ups start brokers with a longer wait than Apache's default.
        asyncio.run(update_brokers(addrs, {"waitTimeMillsInSendQueue": str(args.wait_ms)}))
        spark = local_spark("rocketmq-flow-control", cores=2)
        topics = []
        try:
            with busy_core(not args.no_busy_core):
                for run in range(args.runs):
                    topic = f"FlowRate{run}_{int(time.time())}"
                    asyncio.run(create_topic(namesrv, cluster.cluster_name, topic, 8))  # type: ignore[attr-defined]
                    topics.append(topic)
                    summary = Path(scratch) / f"run{run}.jsonl"
                    frame = spark.range(args.rows).selectExpr("format_string('row %06d', id) AS body")
                    try:
                        frame.repartition(args.partitions).write.format("rocketmq").option(
                            "namesrv", namesrv
                        ).option("topic", topic).option("summary.path", str(summary)).mode("append").save()
                    except Exception as exc:  # the figure this script is about
                        causes = re.findall(r"\w+Error: [^\n]*", str(exc))
                        failures.append((causes[-1] if causes else str(exc).splitlines()[0]).strip()[:300])
                        print(f"run {run + 1}: FAILED  {failures[-1][:160]}")
                        continue
                    acknowledged_runs += 1
                    found = read_summaries(summary)
                    if found and hasattr(found[-1], "busy_answers"):
                        busy_answers += found[-1].busy_answers
                        resends += found[-1].resends
                        window = found[-1].smallest_window
                        smallest = window if smallest is None else min(smallest, window)
                    print(f"run {run + 1}: ok")
        finally:
            spark.stop()
        stored = [asyncio.run(stored_count(namesrv, topic)) for topic in topics]
    print()
    print(
        f"set-up {args.setup}, waitTimeMillsInSendQueue {args.wait_ms} ms, "
        f"{'one core busy' if not args.no_busy_core else 'idle machine'}, "
        f"{args.rows} rows in {args.partitions} partitions per run"
    )
    print(f"failed runs : {len(failures)} of {args.runs} ({100 * len(failures) / args.runs:.0f} %)")
    print(
        f"stored      : {sum(stored)} messages ({acknowledged_runs} successful run(s) x {args.rows} = "
        f"{acknowledged_runs * args.rows} expected from them)"
    )
    duplicated = [n for n in stored if n > args.rows]
    print(f"duplicates  : {'none' if not duplicated else f'{len(duplicated)} topic(s) over {args.rows}'}")
    if smallest is not None:
        print(
            f"flow control: {busy_answers} busy answers, {resends} task resends, smallest window {smallest}"
        )
    for failure in sorted(set(failures)):
        print(f"  failure: {failure}")


if __name__ == "__main__":
    main()
