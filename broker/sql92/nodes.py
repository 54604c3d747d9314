"""The compiled expression: a tree of terms, each evaluated against one message's properties.

Evaluation follows Apache's expression classes: a comparison involving NULL (an absent property) is unknown
(``None``), ``AND``/``OR``/``NOT`` use SQL's three-valued logic, and the string operators answer FALSE, never
unknown, for an absent property. ``str()`` of a term is Java's ``toString`` of it, which Apache's compile
errors quote.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from broker.sql92.values import (
    EvaluationError,
    JavaLong,
    Value,
    compare,
    java_equals,
    java_text,
    parse_java_double,
)

Properties = Mapping[str, str]


class Term:
    """One node of the tree."""

    #: Whether Java's class of this term is a ``BooleanExpression`` (it may stand where a condition must).
    is_boolean = False

    def evaluate(self, properties: Properties) -> Value:
        raise NotImplementedError


class Constant(Term):
    def __init__(self, value: Value) -> None:
        self.value = value

    def evaluate(self, properties: Properties) -> Value:
        return self.value

    def __str__(self) -> str:
        value = self.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        return java_text(value)


class BooleanConstant(Constant):
    """``TRUE``, ``FALSE`` and ``NULL`` literals (Java's ``BooleanConstantExpression``)."""

    is_boolean = True


class Property(Term):
    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, properties: Properties) -> Value:
        return properties.get(self.name)

    def __str__(self) -> str:
        return self.name


class Negate(Term):
    def __init__(self, operand: Term) -> None:
        self.operand = operand

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if value is None or isinstance(value, (bool, str)):
            return None
        if isinstance(value, JavaLong):
            return JavaLong(-value)
        return -value

    def __str__(self) -> str:
        return f"(- {self.operand})"


def _as_condition(value: Value) -> bool | None:
    """Java's ``(Boolean)`` cast of an operand of AND/OR/NOT."""
    if value is None or isinstance(value, bool):
        return value
    raise EvaluationError(f"java.lang.ClassCastException: {java_text(value)} is not a Boolean")


class Not(Term):
    is_boolean = True

    def __init__(self, operand: Term) -> None:
        self.operand = operand

    def evaluate(self, properties: Properties) -> Value:
        value = _as_condition(self.operand.evaluate(properties))
        return None if value is None else not value

    def __str__(self) -> str:
        return f"(NOT {self.operand})"


class BooleanCast(Term):
    """A bare property used as a condition: TRUE only for a Boolean value, which a property never is."""

    is_boolean = True

    def __init__(self, operand: Term) -> None:
        self.operand = operand

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if value is None:
            return None
        return value if isinstance(value, bool) else False

    def __str__(self) -> str:
        return str(self.operand)


class _Chain(Term):
    """``a AND b AND c`` (or OR): Apache nests it to the left, ``((a AND b) AND c)``; it is kept flat here so
    that a long chain costs no recursion, which gives the same answers: three-valued AND and OR are
    associative, and both stop at the first operand that decides, left to right, as the nesting does."""

    is_boolean = True
    symbol = ""

    def __init__(self, left: Term, right: Term) -> None:
        # only a chain the parser built (same operator, on the left) is flattened, as Apache's nests it
        if isinstance(left, _Chain) and type(left) is type(self):
            self.operands: list[Term] = [*left.operands, right]
        else:
            self.operands = [left, right]

    def __str__(self) -> str:
        text = str(self.operands[0])
        for operand in self.operands[1:]:
            text = f"({text} {self.symbol} {operand})"
        return text


class And(_Chain):
    symbol = "&&"

    def evaluate(self, properties: Properties) -> Value:
        unknown = False
        for operand in self.operands:
            value = _as_condition(operand.evaluate(properties))
            if value is False:
                return False
            unknown = unknown or value is None
        return None if unknown else True


class Or(_Chain):
    symbol = "||"

    def evaluate(self, properties: Properties) -> Value:
        unknown = False
        for operand in self.operands:
            value = _as_condition(operand.evaluate(properties))
            if value is True:
                return True
            unknown = unknown or value is None
        return None if unknown else False


class Equal(Term):
    """``=`` (and, under NOT, ``<>``; with a NULL constant, ``IS NULL``)."""

    is_boolean = True

    def __init__(self, left: Term, right: Term) -> None:
        self.left, self.right = left, right

    def evaluate(self, properties: Properties) -> Value:
        left = self.left.evaluate(properties)
        right = self.right.evaluate(properties)
        if left is None or right is None:
            if left is None and right is None:
                return True
            return None if left is None else False
        if java_equals(left, right):
            return True
        return compare(left, right) == 0

    def __str__(self) -> str:
        return f"({self.left} == {self.right})"


_ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class Order(Term):
    """``>``, ``>=``, ``<``, ``<=``: two strings are compared as numbers or not at all."""

    is_boolean = True

    def __init__(self, left: Term, symbol: str, right: Term) -> None:
        self.left, self.symbol, self.right = left, symbol, right
        self._holds: Callable[[int], bool] = _ORDER_TESTS[symbol]

    def evaluate(self, properties: Properties) -> Value:
        left = self.left.evaluate(properties)
        if left is None:
            return None
        right = self.right.evaluate(properties)
        if right is None:
            return None
        if isinstance(left, str) and isinstance(right, str):
            try:
                return self._holds(compare(_double(left), _double(right)))
            except EvaluationError:
                raise EvaluationError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={left}, rv={right}"
                ) from None
        return self._holds(compare(left, right))

    def __str__(self) -> str:
        return f"({self.left} {self.symbol} {self.right})"


def _double(text: str) -> float:
    try:
        return parse_java_double(text)
    except ValueError as error:
        raise EvaluationError(str(error)) from None


class InList(Term):
    is_boolean = True

    def __init__(self, operand: Property, values: list[str], negated: bool) -> None:
        self.operand, self.values, self.negated = operand, values, negated
        self._set = frozenset(values)

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if not isinstance(value, str):
            return None
        return (value in self._set) != self.negated

    def __str__(self) -> str:
        return f"{self.operand} {'NOT IN' if self.negated else 'IN'} ( {', '.join(self.values)} )"


class StringTest(Term):
    """CONTAINS, STARTSWITH, ENDSWITH and their NOT forms: FALSE (not unknown) unless the term is a string."""

    is_boolean = True

    def __init__(self, operand: Term, symbol: str, search: str) -> None:
        self.operand, self.symbol, self.search = operand, symbol, search
        test = symbol.removeprefix("NOT ")
        self._negated = symbol.startswith("NOT ")
        self._test = {"CONTAINS": str.__contains__, "STARTSWITH": str.startswith, "ENDSWITH": str.endswith}[
            test
        ]

    def evaluate(self, properties: Properties) -> Value:
        if not self.search:
            return False
        value = self.operand.evaluate(properties)
        if not isinstance(value, str):
            return False
        return self._test(value, self.search) != self._negated

    def __str__(self) -> str:
        return f"({self.symbol} {self.operand})"
