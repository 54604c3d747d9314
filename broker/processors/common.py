"""What every request handler of the broker shares: decoding headers the way Java answers bad ones.

A Java broker decodes a custom header with ``decodeCommandCustomHeader``; a missing ``@CFNotNull`` field or a
malformed number throws, and its remoting layer answers SYSTEM_ERROR with the exception's text as remark.
:func:`read_header` raises :class:`BadRequest` carrying that remark, and :func:`guarded` turns it into the
answer, so a handler never has to think about it and a malformed request never crashes anything.
"""

from __future__ import annotations

import functools
import logging
from typing import Protocol, TypeVar, runtime_checkable

from rocketmq_wire import CodecError, RemotingCommand, ResponseCode
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.transport import Connection, Handler, InlineHandler, Outcome

log = logging.getLogger("broker.processors")

H = TypeVar("H", bound=CommandHeader)

#: The exception class name Java puts in front of a header-decoding failure.
_JAVA_HEADER_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"


@runtime_checkable
class AnswersInline(Protocol):
    """A processor that answers without ever waiting: the broker registers :meth:`answer_now` inline."""

    def answer_now(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None: ...


class BadRequest(Exception):
    """A request the broker cannot act on; answered with ``code`` and ``remark``."""

    def __init__(self, remark: str, code: int = ResponseCode.SYSTEM_ERROR) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def read_header(request: RemotingCommand, header_cls: type[H]) -> H:
    """The request's typed header; a missing required field or a bad value raises :class:`BadRequest`."""
    try:
        return request.read_header(header_cls)
    except CodecError as exc:
        detail = str(exc)
        prefix = f"{header_cls.__name__}: "
        if detail.startswith(prefix):
            detail = detail[len(prefix) :]
        raise BadRequest(f"{_JAVA_HEADER_EXCEPTION}: {detail}") from None


def guarded(handler: Handler) -> Handler:
    """``handler`` with :class:`BadRequest` answered as Java answers it (nothing at all for a oneway)."""

    @functools.wraps(handler)
    async def run(request: RemotingCommand, conn: Connection) -> Outcome:
        try:
            return await handler(request, conn)
        except BadRequest as exc:
            return _refused(request, conn, exc)

    return run


def guarded_inline(handler: InlineHandler) -> InlineHandler:
    """:func:`guarded` for a handler that answers without waiting (registered inline)."""

    @functools.wraps(handler)
    def run(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            return handler(request, conn)
        except BadRequest as exc:
            return _refused(request, conn, exc)

    return run


def _refused(request: RemotingCommand, conn: Connection, exc: BadRequest) -> RemotingCommand | None:
    log.warning(
        "bad request code %d from %s: %s", request.code, conn.remote_address, exc.remark.splitlines()[0]
    )
    if request.is_oneway:
        return None
    return request.make_response(exc.code, exc.remark)


def response(
    request: RemotingCommand, code: int = ResponseCode.SUCCESS, remark: str | None = None
) -> RemotingCommand:
    """A response without header fields."""
    return request.make_response(code, remark)
