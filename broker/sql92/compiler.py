"""Compiled SQL92 expressions, kept by their text so that each is compiled once, not once per pull.

Apache's parser keeps a bounded cache of results keyed by the expression, failures included; this is the
broker's equivalent, one per broker (a part, not a module global). A hit costs one dictionary lookup, so a
pull looks its subscription's expression up each time instead of holding compiled state per consumer.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from broker.sql92.errors import CompileError
from broker.sql92.nodes import Term
from broker.sql92.parser import parse

log = logging.getLogger("broker.sql92")

#: Distinct expressions remembered; the least recently used goes when another comes.
DEFAULT_CAPACITY = 1024


class ExpressionCompiler:
    """Compiles SQL92 expressions, remembering each one's tree or compile error."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = max(1, capacity)
        self._known: OrderedDict[str, Term | CompileError] = OrderedDict()

    def compile(self, expression: str) -> Term:
        """The expression's tree; :class:`CompileError` (Apache's remark in ``remark``) if it has none."""
        known = self._known.get(expression)
        if known is None:
            try:
                known = parse(expression)
            except CompileError as error:
                log.debug("SQL92 expression %r does not compile: %s", expression, error.remark)
                known = error
            except RecursionError:  # nesting deeper than Python's stack: Java's parser overflows too
                known = CompileError(
                    f"java.lang.StackOverflowError: expression nested too deeply ({len(expression)} chars)"
                )
            self._known[expression] = known
            if len(self._known) > self._capacity:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(expression)
        if isinstance(known, CompileError):
            raise known
        return known

    def __len__(self) -> int:
        return len(self._known)
