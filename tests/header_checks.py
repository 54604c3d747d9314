"""Holding a typed header to a frame Java wrote: shared by the golden-frame tests and the live captures.

:func:`header_mismatches` parses the header from the command's ext entries and checks that it covers every
entry that is not a known out-of-band key and renders each value back to the captured string.
:func:`key_order_mismatch` checks the declared field order: the header's entries inserted first into a Java
``HashMap`` and the rest after them must land every key where Java's map put it (keys that share a bucket
keep their insertion order, so a wrong order shows where two keys collide: :func:`order_is_constrained`).
:func:`java_field_walk` gives the order a 5.x header's fields come in (its ``HashSet<Field>``), which the
header classes declare.
"""

from __future__ import annotations

import itertools

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import bucket_of, final_table_size, hashmap_order, java_string_hash

#: The package of Apache's request and response header classes (their names go into the field hashes).
HEADER_PACKAGE = "org.apache.rocketmq.remoting.protocol.header."

#: Ext entries that are not header fields, and who puts them there.
NON_HEADER_KEYS = {
    "AccessKey": "ACL RPC hook (mqadmin; the C++ client sends it empty)",
    "Signature": "ACL RPC hook",
    "OnsChannel": "C++ client's signing hook",
    "ReqT": "5.x-style request type marker (stream requests)",
    "_UNIQUE_KEY_QUERY": "query-message client, beside the header",
    "TRACE_ON": "broker, on send responses",
    "MSG_REGION": "broker, on send responses",
    "IS_SUPPORT_HEART_BEAT_V2": "5.x broker, on heartbeat responses",
    "IS_SUB_CHANGE": "5.x broker, on heartbeat responses",
}


def header_mismatches(
    cmd: RemotingCommand, header_cls: type[CommandHeader], *, check_values: bool = True
) -> list[str]:
    """What is wrong with ``header_cls`` for this command's ext entries (empty: nothing).

    ``check_values`` False skips comparing rendered values (the C++ client writes some its own way).
    """
    fields = cmd.fields()
    name = header_cls.__name__
    try:
        header = header_cls.from_ext(fields)
    except CodecError as exc:
        return [f"{name}: {exc}"]
    problems = []
    names = {f.java for f in header_cls.java_fields()}
    unexplained = set(fields) - names - NON_HEADER_KEYS.keys()
    if unexplained:
        problems.append(f"{name}: not a field: {sorted(unexplained)}")
    rendered = header.to_ext()
    if set(rendered) != set(fields) & names:
        problems.append(f"{name}: keys {sorted(rendered)}")
    elif check_values:
        wrong = {k: (v, fields[k]) for k, v in rendered.items() if fields[k] != v}
        if wrong:
            problems.append(f"{name}: rendered {wrong}")
    return problems


def _header_keys(cmd: RemotingCommand, header_cls: type[CommandHeader]) -> list[str]:
    ext = cmd.ext_fields
    assert ext is not None
    header = header_cls.from_ext(cmd.fields())
    return [k for k, _ in header.ext_items() if k in ext]


def key_order_mismatch(cmd: RemotingCommand, header_cls: type[CommandHeader]) -> str | None:
    """``None`` when the header's entries first, then the rest, give the captured key order (or the command
    has no ext map to order); else the captured order."""
    ext = cmd.ext_fields
    if not ext:
        return None
    captured = list(ext)
    header_keys = _header_keys(cmd, header_cls)
    rest = [k for k in captured if k not in header_keys]
    if hashmap_order(header_keys + rest, ext.capacity) != captured:
        return f"{header_cls.__name__}: {captured}"
    return None


def order_is_constrained(cmd: RemotingCommand, header_cls: type[CommandHeader]) -> bool:
    """Whether a header key of this command shares a bucket with another key, i.e. whether a wrong field
    order would show in it."""
    ext = cmd.ext_fields
    if not ext:
        return False
    keys = list(ext)
    header_keys = set(_header_keys(cmd, header_cls))
    size = final_table_size(len(keys), ext.capacity)
    for a, b in itertools.combinations(keys, 2):
        if (a in header_keys or b in header_keys) and bucket_of(a, size) == bucket_of(b, size):
            return True
    return False


def java_field_walk(entries: list[tuple[str, str]]) -> list[str]:
    """The order ``new HashSet<Field>()`` filled with these (declaring class, field) pairs iterates in:
    ``Field.hashCode`` is the class name's hash XOR the field name's, spread and masked as in a HashMap."""
    table = 16
    hashes = []
    for count, (cls, name) in enumerate(entries, 1):
        h = (java_string_hash(cls) ^ java_string_hash(name)) & 0xFFFFFFFF
        hashes.append((h ^ (h >> 16), name))
        if count > table * 3 // 4:
            table *= 2
    return [name for h, name in sorted(hashes, key=lambda e: (e[0] & (table - 1), hashes.index(e)))]
