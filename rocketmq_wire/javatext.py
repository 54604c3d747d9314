"""Text as a Java peer turns it into bytes, lone UTF-16 surrogates included.

A Java ``String`` is a sequence of UTF-16 units and may hold a surrogate without its partner: fastjson reads
``"\\ud800"`` in a JSON header into exactly that, and so do we (Python's ``json`` gives a ``str`` holding the
code point U+D800). Such text has no UTF-8 form, so Python's strict encoder refuses it, while Java's
``String.getBytes(UTF_8)`` -- what writes a JSON header, every JSON body and the ACL signature's content --
writes the byte ``?`` for each unpaired surrogate and goes on; a high surrogate directly followed by a low one
is one supplementary character (four bytes), wherever the two halves came from.

:data:`JAVA_UTF8` names an error handler doing just that, for ``str.encode("utf-8", JAVA_UTF8)``: well-formed
text encodes exactly as with ``"strict"`` and at the same speed (the handler is only consulted on a
surrogate), so the hot paths use it directly.

The ROCKETMQ binary header of 4.9.4 and later is written by Netty's ``ByteBufUtil.writeUtf8`` instead, which
agrees with the above except for a high surrogate followed by something other than its partner: Netty then
also swallows the next character, writing ``?`` for it if it is a high surrogate and otherwise its low eight
bits as one byte, which for anything beyond ASCII is not UTF-8 at all. That corruption is deliberately not
reproduced: we write ``String.getBytes``' bytes there too, which agree with Netty's whenever the character
after the lone surrogate is ASCII (or there is none).
"""

from __future__ import annotations

import codecs

__all__ = ["JAVA_UTF8", "java_utf8", "printable"]

#: The error handler name: ``text.encode("utf-8", JAVA_UTF8)`` gives Java's ``getBytes(UTF_8)``.
JAVA_UTF8 = "rocketmq-java-utf8"

_REPLACEMENT = b"?"


def _java_surrogates(error: UnicodeError) -> tuple[bytes, int]:
    """The bytes Java writes for a run of surrogates the UTF-8 codec could not encode."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object
    end = error.end
    out = bytearray()
    i = error.start
    while i < end:
        unit = ord(text[i])
        if 0xD800 <= unit <= 0xDBFF and i + 1 < len(text) and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            # two halves that meet form one character, as they would in a Java String
            code = 0x10000 + ((unit - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)
            out += chr(code).encode("utf-8")
            i += 2
        else:
            out += _REPLACEMENT
            i += 1
    return bytes(out), max(i, end)


codecs.register_error(JAVA_UTF8, _java_surrogates)


def java_utf8(text: str) -> bytes:
    """``text.getBytes(StandardCharsets.UTF_8)`` as Java computes it."""
    return text.encode("utf-8", JAVA_UTF8)


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as a ``\\udXXX`` escape, so that it can be printed."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
