"""ACL 2.0's check in front of the broker's handlers.

Apache runs it as request pipelines before the processor and answers a refusal with NO_PERMISSION and the
refusal's text as the remark (nothing for a oneway). A refused request never reaches its handler, so
nothing of it is stored. Only put in place when ``authenticationEnabled`` or ``authorizationEnabled`` is on.
"""

from __future__ import annotations

import functools
import logging

from broker.auth.errors import AuthError
from broker.auth.service import AuthService
from broker.request_check import Verdict, checked, checked_inline
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, Handler, InlineHandler

log = logging.getLogger("broker.auth")


def auth_guarded(handler: Handler, service: AuthService) -> Handler:
    """``handler`` behind the check of ``service``."""
    return checked(handler, functools.partial(_check, service=service))


def auth_guarded_inline(handler: InlineHandler, service: AuthService) -> InlineHandler:
    """:func:`auth_guarded` for a handler registered inline."""
    return checked_inline(handler, functools.partial(_check, service=service))


def _check(request: RemotingCommand, conn: Connection, *, service: AuthService) -> Verdict:
    """(refused, the answer to a refused request: none for a oneway)."""
    try:
        service.check(request, conn.remote_address)
    except AuthError as exc:
        log.warning("refused request code %d from %s: %s", request.code, conn.remote_address, exc.message)
        if request.is_oneway:
            return True, None
        return True, request.make_response(ResponseCode.NO_PERMISSION, exc.message)
    return False, None
