"""The one exception of the ACL package.

Apache's plain ACL throws a single ``AclException`` for everything that goes wrong -- a bad file, a bad
pattern, a refused request -- and its remoting layer turns the exception into the answer. Keeping one class
here lets the broker catch exactly what ACL refuses and nothing else.
"""

from __future__ import annotations

#: The Java class a 4.9.x broker names in the remark of a refusal.
JAVA_ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"


class AclError(Exception):
    """An ACL check failed, or ACL settings are malformed; ``str()`` is Apache's message text.

    ``where`` is the Java frame Apache's broker names after the message in a refusal's remark
    (``Class.method(File.java:line)``, 4.9.8's line numbers), so a refusal reads as Apache's does.
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def remark(self) -> str:
        """The remark Apache's remoting layer writes: the exception, then its innermost frame."""
        text = f"{JAVA_ACL_EXCEPTION}: {self.message}"
        return f"{text}, {self.where}" if self.where else text
