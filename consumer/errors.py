"""Consumer exceptions, split by what a caller can do about them; every one is a
:class:`client.errors.ClientError` too."""

from __future__ import annotations

from client import errors as client_errors
from client.errors import ClientError


class ConsumerError(ClientError):
    """Base of every consumer failure."""


class ConsumerStateError(ConsumerError):
    """The consumer is not started, already shut down, or was asked something its mode forbids."""


class BrokerError(ConsumerError):
    """A broker answered with a failure code; ``code`` and ``remark`` are what it said (``message``, when
    given, says it in the caller's terms instead of the generic text)."""

    def __init__(self, code: int, remark: str | None, addr: str, message: str | None = None) -> None:
        super().__init__(message or f"broker {addr} answered code {code}: {remark or ''}".rstrip(": "))
        self.code = code
        self.remark = remark
        self.addr = addr


class FilterRefusedError(BrokerError):
    """A broker, asked before a subscription is used (CHECK_CLIENT_CONFIG), refused its filter: it does not
    filter by that expression type (an Apache broker without ``enablePropertyFilter=true``, a broker that
    does not know the request) or the expression does not compile. Pulling would only fail again and again.
    """

    def __init__(
        self,
        code: int,
        remark: str | None,
        addr: str,
        message: str,
        *,
        broker_name: str,
        topic: str,
        expression_type: str | None,
    ) -> None:
        super().__init__(code, remark, addr, message)
        self.broker_name = broker_name
        self.topic = topic
        self.expression_type = expression_type


class BrokerNotFoundError(ConsumerError):
    """No address is known for the broker a queue lives on (its route has not been fetched, or it left)."""


class OffsetNotFoundError(ConsumerError):
    """The broker holds no committed offset for the group on that queue (QUERY_NOT_FOUND)."""


class InvalidOffsetError(ConsumerError, ValueError):
    """A seek outside the queue's current [min, max] offsets."""


class BrokerVersionError(ConsumerError, client_errors.BrokerVersionError):
    """The consumer would need a newer broker (POP from a 4.x broker); nothing was sent. Both a
    :class:`ConsumerError` and the core's refusal."""
