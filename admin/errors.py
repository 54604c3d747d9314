"""Admin exceptions, split by what a caller (or the CLI) does about them.

A server that answered with a failure code is a different situation from one that could not be reached,
and "no such topic / message / online group" is usually an answer to show rather than a fault, so each has
its own class under :class:`AdminError`, which is a :class:`client.errors.ClientError` like every client
failure.
"""

from __future__ import annotations

from client import errors as client_errors
from client.errors import ClientError
from rocketmq_wire.codes import ResponseCode


def _code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


class AdminError(ClientError):
    """Base of every admin failure; its message is meant to be shown to a user as it is."""


class UnreachableError(AdminError):
    """No NameServer, or not the broker asked, answered at all (refused, timed out, connection lost)."""


class RequestRefusedError(AdminError):
    """A server answered a request with a failure code; ``code`` and ``remark`` are what it said."""

    def __init__(self, what: str, addr: str, code: int, remark: str | None) -> None:
        detail = f": {remark.strip()}" if remark and remark.strip() else ""
        super().__init__(f"{what} refused by {addr} (code {code} {_code_name(code)}){detail}")
        self.addr = addr
        self.code = code
        self.remark = remark


class BrokerVersionError(AdminError, client_errors.BrokerVersionError):
    """The broker's release lacks what was asked (topic attributes on a 4.x broker, say); nothing was
    changed. Both an :class:`AdminError` and the core's refusal."""


class OffsetResetPendingError(AdminError):
    """A 5.2+ broker (``useServerSideResetOffset``, on by default) answered an offset commit with success but
    ignored it: a reset of the group's offsets on that queue waits for one of its consumers to pull, and until
    then every commit is dropped."""

    def __init__(self, group: str, topic: str, queue_id: int, addr: str) -> None:
        super().__init__(
            f"broker {addr} ignored the offset of group {group!r} on {topic}:{queue_id}: a reset of the "
            "group's offsets is pending there until one of its consumers pulls (useServerSideResetOffset)"
        )
        self.group = group
        self.topic = topic
        self.queue_id = queue_id
        self.addr = addr


class TopicNotFoundError(AdminError):
    """The NameServers have no route for the topic."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"no route for topic {topic!r}: the NameServers do not know it")
        self.topic = topic


class ConsumerNotOnlineError(AdminError):
    """The consumer group has no live connection (or no recorded progress) on any broker asked."""


class MessageNotFoundError(AdminError):
    """No broker holds a message for that id or key."""
