"""Run the project's Broker from a Java-style properties file, until SIGTERM or SIGINT.

``python -m tests.integration.clusters.python_broker_main CONFIG`` -- the stand-in the python provider uses
while ``rmq broker`` is not registered in ``cli/main.py``. The file holds Apache's setting names
(``brokerName``, ``listenPort``, ``namesrvAddr``, ``transactionCheckInterval`` …), so the very same file
configures an Apache broker in the binaries provider (:meth:`broker.BrokerConfig.from_properties` reads it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from broker import Broker, BrokerConfig

log = logging.getLogger("tests.clusters.python_broker")


async def serve(config: BrokerConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    broker = Broker(config)
    await broker.start()
    try:
        # The same words as Apache's BrokerStartup, so one pattern finds either broker's boot line.
        print(f"The broker[{config.broker_name}, {broker.address}] boot success.", flush=True)
        await stop.wait()
        log.info("SIGTERM: shutting down")
    finally:
        await broker.close()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.integration.clusters.python_broker_main CONFIG", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")
    config = BrokerConfig.from_properties(Path(argv[0]).read_text("utf-8"))
    config.validate()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
