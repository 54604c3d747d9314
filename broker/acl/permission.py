"""Apache's plain-ACL permission model: the bits, how a YAML word becomes bits, and when owned bits cover
needed ones.

The bits are Apache's own (``Permission.java``): DENY is 1, ANY 2, PUB 4, SUB 8. ANY is not PUB|SUB: it is a
*need* meaning "either will do", met by an account holding PUB or SUB. An owned value with the DENY bit
set refuses everything, whatever else it holds. A word the parser does not know reads as DENY, so a typo in
the file closes access rather than opening it.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.acl.errors import AclError
from rocketmq_wire.codes import RequestCode

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

#: The words the YAML file and the admin requests use, and the bits they stand for.
WORDS: dict[str, int] = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

#: Request codes only an ``admin: true`` account may send (Apache's ``Permission.ADMIN_CODE``).
ADMIN_CODES: frozenset[int] = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)


def parse_perm(word: str | None) -> int:
    """The bits a permission word stands for; a missing or unknown word is DENY, as in Apache."""
    if word is None:
        return DENY
    return WORDS.get(word.strip(), DENY)


def check_permission(needed: int, owned: int) -> bool:
    """Whether an account owning ``owned`` may do what needs ``needed``."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def split_resource_perm(entry: str, kind: str) -> tuple[str, int]:
    """``"topicA=PUB|SUB"`` -> ``("topicA", PUB | SUB)``; anything but exactly one ``=`` is an error.

    Apache splits on ``=`` dropping empty pieces, so ``"=SUB"`` and ``"a=b=c"`` are both malformed.
    """
    pieces = [piece for piece in entry.split("=") if piece]
    if len(pieces) != 2:
        raise AclError(f"Parse resource permission failed for {kind}:{entry}")
    return pieces[0].strip(), parse_perm(pieces[1])


def check_resource_perms(entries: Iterable[str] | None) -> None:
    """Refuse entries an admin request may not write: not ``Res=Perm``, or a word that is none of
    PUB, SUB, PUB|SUB, SUB|PUB, DENY (a file may hold such a word -- it reads as DENY -- but an update
    may not introduce one)."""
    for entry in entries or ():
        pieces = [piece for piece in entry.split("=") if piece]
        if len(pieces) != 2:
            raise AclError(
                f"Parse Resource format error for {entry}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        word = pieces[1].strip()
        if word != "DENY" and parse_perm(word) == DENY:
            raise AclError(
                f"Parse resource permission error for {entry}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )
