"""The two refusals of ACL 2.0.

Apache tells an authentication failure from an authorization failure by class, but its broker answers both
the same way: NO_PERMISSION with the exception's message as the remark. Two classes are kept so the admin
handlers and the tests can say which check refused, and :class:`AuthError` lets callers catch either.
"""

from __future__ import annotations


class AuthError(Exception):
    """A refusal; ``str()`` is the remark Apache's broker writes for it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AuthenticationError(AuthError):
    """Who sent the request could not be established (unsigned, unknown user, bad signature, disabled)."""


class AuthorizationError(AuthError):
    """The sender is known but may not do this (or the ACL data given to an admin request is invalid)."""
