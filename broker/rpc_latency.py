"""``rocketmq_rpc_latency``: how long the broker took to answer each request, as Apache's remoting layer
records it (per request code, response code and outcome of the write).

Each registered handler is wrapped once, when the handler table is built. The wrapper reads the clock
before and after the handler and adds to one bucket of a :class:`~broker.histogram.HistogramTable` keyed
by plain integers; the codes become Apache's names (the Java constant's name in lower case, the number for
an unknown code) only when the exporter renders them. A handler that answers later through a
:class:`~rocketmq_wire.transport.DeferredAnswer` is timed to when that answer is given.

A pull held by long polling is answered later by the hold service, which reports that answer here; it is
recorded with ``is_long_polling="true"``, as Apache records a suspended request, timed from when it was held.
"""

from __future__ import annotations

import time

from broker.histogram import HistogramTable
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import Connection, Handler
from rocketmq_wire.transport.deferred import DeferredAnswer
from rocketmq_wire.transport.dispatch import InlineHandler, Outcome

#: Apache's buckets for ``rocketmq_rpc_latency`` (ms).
RPC_LATENCY_BOUNDS = (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)

RESULT_SUCCESS = "success"
RESULT_ONEWAY = "oneway"
RESULT_WRITE_FAILED = "write_channel_failed"
_RESULTS = (RESULT_SUCCESS, RESULT_ONEWAY, RESULT_WRITE_FAILED)

_REQUEST_NAMES = {int(code): code.name.lower() for code in RequestCode}
_RESPONSE_NAMES = {int(code): code.name.lower() for code in ResponseCode}


def request_code_name(code: int) -> str:
    """Apache's ``RemotingHelper.getRequestCodeDesc``: the constant's name lower-cased, else the number."""
    return _REQUEST_NAMES.get(code, str(code))


def response_code_name(code: int) -> str:
    return _RESPONSE_NAMES.get(code, str(code))


class RpcLatency:
    """The series of ``rocketmq_rpc_latency``, keyed by (request code, response code, result index, long
    polled)."""

    def __init__(self) -> None:
        self.table: HistogramTable[tuple[int, int, int, bool]] = HistogramTable(RPC_LATENCY_BOUNDS)

    def long_polled(
        self, request: RemotingCommand, response: RemotingCommand, conn: Connection, held_at: float
    ) -> None:
        """A held pull's answer (the hold service's observer)."""
        self._record(request, response, conn, held_at, True)

    def _record(
        self,
        request: RemotingCommand,
        response: RemotingCommand,
        conn: Connection,
        started: float,
        long_polled: bool = False,
    ) -> None:
        elapsed_ms = int((time.perf_counter() - started) * 1000)
        if request.is_oneway:
            result = 1
        elif conn.is_closed:
            result = 2
        else:
            result = 0
        self.table.observe((request.code, response.code, result, long_polled), elapsed_ms)

    def wrap(self, handler: Handler) -> Handler:
        """``handler``, timed; what it answers and raises is passed on unchanged."""
        record = self._record

        async def timed(request: RemotingCommand, conn: Connection) -> Outcome:
            started = time.perf_counter()
            outcome = await handler(request, conn)
            if isinstance(outcome, RemotingCommand):
                record(request, outcome, conn, started)
            elif isinstance(outcome, DeferredAnswer):
                relay = DeferredAnswer()

                def settled(answer: RemotingCommand | None, exc: Exception | None) -> None:
                    if exc is not None:
                        relay.fail(exc)
                        return
                    if answer is not None:
                        record(request, answer, conn, started)
                    relay.resolve(answer)

                outcome.deliver_to(settled)
                return relay
            return outcome

        return timed

    def wrap_inline(self, handler: InlineHandler) -> InlineHandler:
        record = self._record

        def timed(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
            started = time.perf_counter()
            answer = handler(request, conn)
            if answer is not None:
                record(request, answer, conn, started)
            return answer

        return timed

    def series(self) -> list[tuple[dict[str, str], list[int], float]]:
        """Labels, bucket counts and sum of every series, for the exporter."""
        rows: list[tuple[dict[str, str], list[int], float]] = []
        for (request_code, response_code, result, long_polled), buckets in self.table.items():
            labels = {
                "is_long_polling": "true" if long_polled else "false",
                "protocol_type": "remoting",
                "request_code": request_code_name(request_code),
                "response_code": response_code_name(response_code),
                "result": _RESULTS[result],
            }
            rows.append((labels, list(buckets.counts), buckets.total))
        return rows
