"""A check run before a handler: the shared shape of the plain ACL's and ACL 2.0's wrappers.

Both access checks sit in front of the broker's handlers the same way: the check answers the request
itself when it refuses (or drops it, for a oneway), and only a request it lets through reaches the handler.
Each check says what a refusal looks like; this module only puts it in front, for handlers run as tasks and
handlers answered inline alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, Handler, InlineHandler, Outcome

#: ``(refused, answer)``: the answer to a refused request, ``None`` for a oneway one (nothing is sent).
Verdict = tuple[bool, RemotingCommand | None]
Check = Callable[[RemotingCommand, Connection], Verdict]


def checked(handler: Handler, check: Check) -> Handler:
    """``handler`` behind ``check``."""

    @functools.wraps(handler)
    async def run(request: RemotingCommand, conn: Connection) -> Outcome:
        refused, answer = check(request, conn)
        return answer if refused else await handler(request, conn)

    return run


def checked_inline(handler: InlineHandler, check: Check) -> InlineHandler:
    """:func:`checked` for a handler registered inline."""

    @functools.wraps(handler)
    def run(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        refused, answer = check(request, conn)
        return answer if refused else handler(request, conn)

    return run
