"""The ACL check in front of the broker's handlers.

Apache runs its check as an RPC hook before the processor, after the send queue has admitted the request,
and answers a refusal the way its remoting layer answers any exception: SYSTEM_ERROR, remark
``org.apache.rocketmq.acl.common.AclException: <message>, <Java frame>``, nothing at all for a oneway
request. A refused request never reaches its handler, so nothing of it is stored or counted.

The wrapper is only put in place when ACL is on; with ACL off the handlers are registered as they are and
the request path is unchanged.
"""

from __future__ import annotations

import functools
import logging

from broker.acl.errors import AclError
from broker.acl.manager import PlainAclManager
from broker.request_check import Verdict, checked, checked_inline
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, Handler, InlineHandler

log = logging.getLogger("broker.acl")


def acl_guarded(handler: Handler, manager: PlainAclManager) -> Handler:
    """``handler`` behind the check of ``manager``."""
    return checked(handler, functools.partial(_check, manager=manager))


def acl_guarded_inline(handler: InlineHandler, manager: PlainAclManager) -> InlineHandler:
    """:func:`acl_guarded` for a handler registered inline."""
    return checked_inline(handler, functools.partial(_check, manager=manager))


def _check(request: RemotingCommand, conn: Connection, *, manager: PlainAclManager) -> Verdict:
    """(refused, the answer to a refused request: none for a oneway)."""
    try:
        manager.check(request, conn.remote_address)
    except AclError as exc:
        log.warning("refused request code %d from %s: %s", request.code, conn.remote_address, exc.message)
        if request.is_oneway:
            return True, None
        return True, request.make_response(ResponseCode.SYSTEM_ERROR, exc.remark())
    return False, None
