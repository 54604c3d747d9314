"""AccessKey/SecretKey request signing, as Apache's ``AclClientRPCHook`` does it.

The signature is Base64(HMAC-SHA1(secret, every ext value in key order, then the body)), computed over the
ext map *after* the typed header was merged into it and the AccessKey (and security token) added; the
result goes into the ``Signature`` entry. A broker with ACL enabled recomputes it and refuses a mismatch.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
from collections.abc import Mapping

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.javatext import java_utf8

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


def _utf16_units(text: str) -> bytes:
    """A sort key giving Java's ``String.compareTo`` order."""
    return text.encode("utf-16-be", "surrogatepass")


def signature_of(fields: Mapping[str, str], body: bytes, secret_key: str) -> str:
    """The ``Signature`` value for these ext entries (``Signature`` itself excluded) and body.

    As ``AclUtils.combineRequestContent``: the values in ``TreeMap`` order of their keys (UTF-16 units),
    joined into one string, which becomes bytes as Java's ``getBytes`` makes them (a lone surrogate is
    ``?``).
    """
    keys = sorted((k for k in fields if k != SIGNATURE), key=_utf16_units)
    content = java_utf8("".join(fields[k] for k in keys))
    digest = hmac.new(java_utf8(secret_key), content + body, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


@dataclasses.dataclass(frozen=True, slots=True)
class AclCredentials:
    access_key: str
    secret_key: str
    security_token: str | None = None

    def sign(self, cmd: RemotingCommand) -> None:
        """Add AccessKey (and token) and Signature to ``cmd``'s ext fields, as the Java hook does.

        The typed header's entries are signed too; they stay in ``custom_header`` (the binary fast path
        writes them ahead of the map, so Java's own hook output repeats them there: we copy them in as well,
        which is exactly what 4.9.8 puts on the wire).
        """
        ext = ExtFields(cmd.custom_header.ext_items()) if cmd.custom_header is not None else ExtFields()
        if cmd.ext_fields:
            ext.capacity = cmd.ext_fields.capacity
            ext.update(cmd.ext_fields)
        ext[ACCESS_KEY] = self.access_key
        if self.security_token:
            ext[SECURITY_TOKEN] = self.security_token
        ext[SIGNATURE] = signature_of(ext, cmd.body, self.secret_key)
        cmd.ext_fields = ext


def verify(cmd: RemotingCommand, secret_key: str) -> bool:
    """Whether ``cmd`` carries a valid signature for ``secret_key`` (what an ACL-enabled server checks)."""
    fields = cmd.fields()
    given = fields.get(SIGNATURE)
    return given is not None and hmac.compare_digest(given, signature_of(fields, cmd.body, secret_key))
