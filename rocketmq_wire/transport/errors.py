"""Exceptions raised by the transport.

Callers of the client decide what to do by the *kind* of failure -- a producer retries another broker after a
connect error, but must not blindly resend after a timeout because the message may have been stored -- so each
kind has its own class under one :class:`RemotingError` base. Each carries the peer address for the log line.
"""

from __future__ import annotations


class RemotingError(Exception):
    """Base of every transport failure; ``addr`` names the peer ("host:port") when it is known."""

    def __init__(self, message: str, addr: str | None = None) -> None:
        super().__init__(message)
        self.addr = addr


class RemotingConnectError(RemotingError):
    """No connection could be established (refused, unreachable, TLS handshake failed, connect timed out).

    Nothing was sent, so the request is safe to retry elsewhere.
    """


class RemotingTimeoutError(RemotingError):
    """The peer did not answer within the call's timeout; the request may or may not have been processed.

    The connection stays usable: a late answer is dropped when it arrives.
    """

    def __init__(self, message: str, addr: str | None = None, timeout_ms: float | None = None) -> None:
        super().__init__(message, addr)
        self.timeout_ms = timeout_ms


class RemotingClosedError(RemotingError):
    """The connection closed (peer hang-up, malformed input, local close) before the call completed.

    ``reason`` says why, in the words that were also logged when the connection went down.
    """

    def __init__(self, message: str, addr: str | None = None, reason: str | None = None) -> None:
        super().__init__(message, addr)
        self.reason = reason
