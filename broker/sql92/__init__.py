"""SQL92 message filters as Apache's broker evaluates them (``enablePropertyFilter``).

:class:`ExpressionCompiler` turns an expression into a tree once (a broker part, caching by text);
a tree's ``evaluate`` answers TRUE, FALSE or unknown (``None``) for one message's properties, or raises
:class:`EvaluationError` where Java's code throws. Only TRUE selects a message. :mod:`broker.filtering`
wraps this with the tag filter into the one filter object a pull (or a pop) asks.
"""

from __future__ import annotations

from broker.sql92.compiler import ExpressionCompiler
from broker.sql92.errors import CompileError
from broker.sql92.nodes import Properties, Term
from broker.sql92.values import EvaluationError

__all__ = ["CompileError", "EvaluationError", "ExpressionCompiler", "Properties", "Term", "matches"]


def matches(expression: Term, properties: Properties) -> bool:
    """Whether a message with these properties is selected: only a TRUE result is, and an evaluation that
    throws in Java selects nothing (Apache logs it and drops the message)."""
    try:
        return expression.evaluate(properties) is True
    except (EvaluationError, RecursionError):  # RecursionError: nesting deeper than this stack allows
        return False
