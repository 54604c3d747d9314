"""Producer exceptions, split by what a caller can do about them.

A message refused before sending (too large, bad topic) will never succeed as is; a broker refusal carries
the response code so callers can tell "no permission" from "busy"; a send that ran out of attempts keeps the
last underlying error as its cause. Every one is a :class:`client.errors.ClientError` too.
"""

from __future__ import annotations

from client import errors as client_errors


class ProducerError(client_errors.ClientError):
    """Base of every producer failure."""


class ProducerStateError(ProducerError):
    """The producer is not started, or already shut down."""


class DuplicateGroupError(ProducerStateError, client_errors.DuplicateGroupError):
    """A second producer of one group on one client instance (same ``instance_name``); Java refuses it too.

    Both a :class:`ProducerStateError`, as it always was, and the core's refusal."""


class MessageValidationError(ProducerError, ValueError):
    """The message (or batch) breaks a rule the Java client enforces before sending; nothing was sent."""


class MessageTooLargeError(MessageValidationError):
    """The body, or the encoded batch, is larger than ``max_message_size``."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the message body size {size} is over the max value of {limit} bytes")
        self.size = size
        self.limit = limit


class BrokerError(ProducerError):
    """A broker answered with a failure code; ``code`` and ``remark`` are what it said."""

    def __init__(self, code: int, remark: str | None, addr: str) -> None:
        super().__init__(f"broker {addr} answered code {code}: {remark or ''}".rstrip(": "))
        self.code = code
        self.remark = remark
        self.addr = addr


class BrokerVersionError(ProducerError, client_errors.BrokerVersionError):
    """The message needs a newer broker than the one chosen (a timer message to a 4.x broker); nothing was
    sent. Both a :class:`ProducerError` and the core's refusal."""


class RequestTimeoutError(ProducerError, TimeoutError):
    """A request was sent (and stored) but no reply came within its time (Java's RequestTimeoutException,
    with its message)."""


class NoRouteError(ProducerError):
    """No NameServer knows the topic (and no default route allowed auto-creating it)."""


class SendFailedError(ProducerError):
    """Every attempt failed; ``__cause__`` is the last failure and ``brokers`` where it tried."""

    def __init__(self, message: str, brokers: list[str], code: int | None = None) -> None:
        super().__init__(message)
        self.brokers = brokers
        self.code = code


class SendTimeoutError(SendFailedError):
    """The send's time budget ran out before an attempt succeeded (the message may still have been stored
    if the last attempt timed out waiting for the answer)."""


class BrokerBusyError(SendFailedError):
    """Every broker tried kept refusing the send for load (SYSTEM_BUSY and kin) until the time budget ran out.

    Such refusals come before the broker writes anything, so the message was not stored and sending it again
    cannot duplicate it. ``broker``/``addr``/``remark`` are the last refusal's.
    """

    def __init__(
        self, message: str, brokers: list[str], code: int, *, broker: str, addr: str, remark: str | None
    ) -> None:
        super().__init__(message, brokers, code)
        self.broker = broker
        self.addr = addr
        self.remark = remark
