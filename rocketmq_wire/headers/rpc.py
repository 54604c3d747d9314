"""The routing fields 5.x request headers inherit, as reusable bases.

From 5.0 on (and in the late 4.9.x clients the golden frames come from) most request headers extend
``RpcRequestHeader``, which adds the namespace, the target broker name and a oneway marker, and
``TopicRequestHeader``, which adds the "logical queue" switch. A proxy uses them to route a request without
knowing its code; a broker mostly ignores them. They travel as ordinary ext entries with short names.

The bases declare those fields first, which is where Java's reflection puts them relative to the subclass
fields they share a ``HashMap`` bucket with in the captured frames (``bname`` before ``commitOffset``,
before ``delayLevel``). A header whose frames show the opposite declares the fields itself instead.
"""

from __future__ import annotations

import dataclasses

from rocketmq_wire.headers.base import CommandHeader, jbool, jstr


@dataclasses.dataclass(slots=True, kw_only=True)
class RpcRequestHeader(CommandHeader):
    """Base of request headers that may carry a namespace and the target broker name.

    ``bname`` keeps its wire name as attribute: some subclasses have a ``brokerName`` field of their own.
    """

    namespace: str | None = jstr("ns")
    namespaced: bool | None = jbool("nsd")
    bname: str | None = jstr("bname")
    oneway: bool | None = jbool("oway")


@dataclasses.dataclass(slots=True, kw_only=True)
class TopicRequestHeader(RpcRequestHeader):
    """Base of request headers about a topic (Java's ``TopicQueueRequestHeader`` adds nothing on the wire)."""

    logical: bool | None = jbool("lo")
