"""Apache's SQL92 grammar (its ``SelectorParser.jj``), by recursive descent, with Apache's compile errors.

Why by hand rather than with a parsing library such as ``lark``: the grammar is a dozen small LL(2) rules,
and what must match Apache is less the language than its edges -- the parse stops once an expression is
complete (trailing text is ignored), literals and operand checks fail with Java's own exception texts, and
a syntax error's remark names the token and position as JavaCC's parser does. A descent that mirrors the
``.jj`` rule by rule gives all of that directly, where a generated LALR/Earley parser would need its errors
translated back and its greedy end-of-input check undone; it also adds no dependency to the broker.

Precedence, loosest first: OR; AND; ``=``/``<>``/IS [NOT] NULL; the comparisons, BETWEEN, IN and the string
operators; unary ``+``/``-``/NOT; literals, properties and parentheses. Compile-time checks are Apache's:
``<``/``>`` only between numbers and properties, no comparison with a NULL literal, BETWEEN's constant bounds
in order, IN only on a property, and the whole expression a condition.
"""

from __future__ import annotations

from broker.sql92 import lexer as t
from broker.sql92.errors import CompileError
from broker.sql92.lexer import TOKEN_IMAGE, Lexer, Token, escape
from broker.sql92.nodes import (
    And,
    BooleanCast,
    BooleanConstant,
    Constant,
    Equal,
    InList,
    Negate,
    Not,
    Or,
    Order,
    Property,
    StringTest,
    Term,
)
from broker.sql92.values import INT_MAX, INT_MIN, EvaluationError, JavaLong, compare, java_text

_RUNTIME = "java.lang.RuntimeException: "
_PARSE = "org.apache.rocketmq.filter.parser.ParseException: "

_COMPARISON_STARTS = frozenset(
    {t.GT, t.GE, t.LT, t.LE, t.CONTAINS, t.STARTSWITH, t.ENDSWITH, t.BETWEEN, t.IN, t.NOT}
)
_AFTER_NOT = {t.CONTAINS, t.STARTSWITH, t.ENDSWITH, t.BETWEEN, t.IN}
_LITERALS = frozenset({t.STRING, t.DECIMAL, t.FLOATING, t.TRUE, t.FALSE, t.NULL})
_UNARY_STARTS = _LITERALS | {t.ID, t.LPAREN, t.PLUS, t.MINUS, t.NOT}
_ORDER_SYMBOLS = {t.GT: ">", t.GE: ">=", t.LT: "<", t.LE: "<="}
_STRING_TESTS = {t.CONTAINS: "CONTAINS", t.STARTSWITH: "STARTSWITH", t.ENDSWITH: "ENDSWITH"}


def parse(text: str) -> Term:
    """The expression's tree, a condition; :class:`CompileError` with Apache's remark when it has none."""
    return _Parser(text).condition()


class _Parser:
    def __init__(self, text: str) -> None:
        self._lexer = Lexer(text)
        self._tokens: list[Token] = []
        self._index = 0
        #: Token kinds that would have been accepted at the current token (for a syntax error's remark).
        self._expected: set[int] = set()

    # -- tokens ----------------------------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> Token:
        while len(self._tokens) <= self._index + ahead:
            self._tokens.append(self._lexer.next())
        return self._tokens[self._index + ahead]

    def _take(self, kind: int) -> Token:
        token = self._peek()
        if token.kind != kind:
            self._expected.add(kind)
            raise self._syntax_error()
        self._index += 1
        self._expected = set()
        return token

    def _offers(self, kinds: frozenset[int] | set[int]) -> bool:
        """Whether the current token is one of ``kinds``; if not, they were what could have come here."""
        if self._peek().kind in kinds:
            return True
        self._expected |= kinds
        return False

    def _syntax_error(self) -> CompileError:
        """JavaCC's ``ParseException`` text: the token met, where, and what could have come instead."""
        token = self._peek()
        if token.kind == t.EOF:
            met = TOKEN_IMAGE[t.EOF]
        else:
            met = f' {TOKEN_IMAGE[token.kind]} "{escape(token.image)} "'
        # Apache's parser lists the tokens its tables expect in kind order, then the ones its lookahead
        # found (only the "+" of unary plus here).
        expected = sorted(self._expected - {t.PLUS}) + ([t.PLUS] if t.PLUS in self._expected else [])
        lines = "".join(f"{TOKEN_IMAGE[kind]} {'...' if kind != t.EOF else ''}\n    " for kind in expected)
        heading = "Was expecting:" if len(expected) == 1 else "Was expecting one of:"
        where = f"at line {token.line}, column {token.column}"
        return CompileError(f'{_PARSE}Encountered "{met}" {where}.\n{heading}\n    {lines}')

    # -- the grammar -----------------------------------------------------------------------------------------

    def condition(self) -> Term:
        return _as_condition(self._or())

    def _or(self) -> Term:
        left = self._and()
        while self._offers({t.OR}):
            self._take(t.OR)
            left = Or(_as_condition(left), _as_condition(self._and()))
        return left

    def _and(self) -> Term:
        left = self._equality()
        while self._offers({t.AND}):
            self._take(t.AND)
            left = And(_as_condition(left), _as_condition(self._equality()))
        return left

    def _equality(self) -> Term:
        left = self._comparison()
        while self._offers({t.EQ, t.NE, t.IS}):
            kind = self._peek().kind
            self._take(kind)
            if kind == t.EQ:
                left = _equal(left, self._comparison())
            elif kind == t.NE:
                left = Not(_equal(left, self._comparison()))
            elif self._peek().kind == t.NULL:
                self._take(t.NULL)
                left = Equal(left, BooleanConstant(None))
            else:
                self._expected.add(t.NULL)  # what the lookahead for IS NULL wanted
                self._take(t.NOT)
                self._take(t.NULL)
                left = Not(Equal(left, BooleanConstant(None)))
        return left

    def _comparison(self) -> Term:
        left = self._unary()
        while self._offers(_COMPARISON_STARTS):
            token = self._peek()
            kind, negated = token.kind, False
            if kind == t.NOT:
                if self._peek(1).kind not in _AFTER_NOT:
                    self._expected |= _COMPARISON_STARTS - {t.NOT}
                    raise self._syntax_error()
                self._take(t.NOT)
                kind, negated = self._peek().kind, True
            self._take(kind)
            if kind in _ORDER_SYMBOLS:
                left = _order(left, _ORDER_SYMBOLS[kind], self._unary())
            elif kind in _STRING_TESTS:
                symbol = ("NOT " if negated else "") + _STRING_TESTS[kind]
                left = StringTest(left, symbol, self._string())
            elif kind == t.BETWEEN:
                low = self._unary()
                self._take(t.AND)
                high = self._unary()
                left = _not_between(left, low, high) if negated else _between(left, low, high)
            else:
                self._take(t.LPAREN)
                values = [self._string()]
                while self._offers({t.COMMA}):
                    self._take(t.COMMA)
                    values.append(self._string())
                self._take(t.RPAREN)
                if not isinstance(left, Property):
                    raise CompileError(f"{_RUNTIME}Expected a property for In expression, got: {left}")
                left = InList(left, values, negated)
        return left

    def _unary(self) -> Term:
        kind = self._peek().kind
        if kind == t.PLUS and self._peek(1).kind in _UNARY_STARTS:
            self._take(t.PLUS)
            return self._unary()
        if kind == t.MINUS:
            self._take(t.MINUS)
            return Negate(self._unary())
        if kind == t.NOT:
            self._take(t.NOT)
            return Not(_as_condition(self._unary()))
        return self._primary()

    def _primary(self) -> Term:
        token = self._peek()
        kind = token.kind
        if kind == t.ID:
            self._take(t.ID)
            return Property(token.image)
        if kind == t.LPAREN:
            self._take(t.LPAREN)
            inner = self._or()
            self._take(t.RPAREN)
            return inner
        if kind in _LITERALS:
            return self._literal()
        self._expected |= _UNARY_STARTS
        raise self._syntax_error()

    def _literal(self) -> Term:
        token = self._peek()
        self._take(token.kind)
        if token.kind == t.STRING:
            return Constant(_unquote(token.image))
        if token.kind == t.DECIMAL:
            return Constant(_decimal(token.image))
        if token.kind == t.FLOATING:
            return Constant(_floating(token.image))
        return BooleanConstant({t.TRUE: True, t.FALSE: False, t.NULL: None}[token.kind])

    def _string(self) -> str:
        return _unquote(self._take(t.STRING).image)


def _unquote(image: str) -> str:
    return image[1:-1].replace("''", "'")


def _decimal(image: str) -> int:
    digits = image[:-1] if image[-1] in "lL" else image
    value = int(digits)
    if value > 2**63 - 1:
        raise CompileError(f'java.lang.NumberFormatException: For input string: "{digits}"')
    return value if INT_MIN <= value <= INT_MAX else JavaLong(value)


def _floating(image: str) -> float:
    value = float(image)
    if value == float("inf"):
        raise CompileError(f"{_RUNTIME}{image} is greater than 1.7976931348623157E308")
    if value < 5e-324:
        raise CompileError(f"{_RUNTIME}{image} is less than 4.9E-324")
    return value


def _as_condition(term: Term) -> Term:
    if term.is_boolean:
        return term
    if isinstance(term, Property):
        return BooleanCast(term)
    raise CompileError(f"{_PARSE}Expression will not result in a boolean value: {term}")


def _check_orderable(term: Term) -> None:
    if isinstance(term, Constant) and not term.is_boolean:
        if isinstance(term.value, (int, float)) and not isinstance(term.value, bool):
            return
        raise CompileError(f"{_RUNTIME}Value '{term}' cannot be compared.")
    if term.is_boolean:
        raise CompileError(f"{_RUNTIME}Value '{term}' cannot be compared.")


def _order(left: Term, symbol: str, right: Term) -> Term:
    _check_orderable(left)
    _check_orderable(right)
    return Order(left, symbol, right)


def _equal(left: Term, right: Term) -> Term:
    for term in (left, right):
        if isinstance(term, Constant) and term.value is None:
            raise CompileError(f"{_RUNTIME}'{term}' cannot be compared.")
    if (
        isinstance(left, Constant)
        and isinstance(right, Constant)
        and left.is_boolean
        and not right.is_boolean
    ):
        raise CompileError(f"{_RUNTIME}'{left}' cannot be compared with '{right}'")
    return Equal(left, right)


def _between(value: Term, low: Term, high: Term) -> Term:
    if isinstance(low, Constant) and isinstance(high, Constant):
        if low.value is None or high.value is None:
            raise CompileError(f"{_RUNTIME}Illegal values of between, values can not be null!")
        try:
            in_order = compare(high.value, low.value) >= 0
        except EvaluationError as error:
            raise CompileError(str(error)) from None
        if not in_order:
            raise CompileError(
                f"{_RUNTIME}Illegal values of between, left value({java_text(low.value)}) must less than "
                f"or equal to right value({java_text(high.value)})"
            )
    return And(_order(value, ">=", low), _order(value, "<=", high))


def _not_between(value: Term, low: Term, high: Term) -> Term:
    return Or(_order(value, "<", low), _order(value, ">", high))
