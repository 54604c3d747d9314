"""Apache's SQL92 tokens, read one at a time as the parser asks for them.

Tokens are read lazily, as the parser Apache generates with JavaCC reads them: the expression ends where the
grammar is satisfied, so text after a complete expression is never looked at beyond the one token the
parser peeks (``a > 5 b`` compiles as ``a > 5``; ``a > 5 !`` does not, ``!`` being no token at all).
Token kinds are Apache's numbers, so errors can name them as Apache's do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from broker.sql92.errors import CompileError

EOF, NOT, AND, OR, BETWEEN, IN, TRUE, FALSE, NULL, IS = 0, 8, 9, 10, 11, 12, 13, 14, 15, 16
CONTAINS, STARTSWITH, ENDSWITH, DECIMAL, FLOATING, STRING, ID = 17, 18, 19, 20, 21, 23, 24
EQ, NE, GT, GE, LT, LE, LPAREN, COMMA, RPAREN, PLUS, MINUS = range(25, 36)

#: How Apache's parser names each kind in its messages.
TOKEN_IMAGE = {
    EOF: "<EOF>",
    **{
        kind: f'"{word}"'
        for word, kind in (
            ("NOT", NOT),
            ("AND", AND),
            ("OR", OR),
            ("BETWEEN", BETWEEN),
            ("IN", IN),
            ("TRUE", TRUE),
            ("FALSE", FALSE),
            ("NULL", NULL),
            ("IS", IS),
            ("CONTAINS", CONTAINS),
            ("STARTSWITH", STARTSWITH),
            ("ENDSWITH", ENDSWITH),
            ("=", EQ),
            ("<>", NE),
            (">", GT),
            (">=", GE),
            ("<", LT),
            ("<=", LE),
            ("(", LPAREN),
            (",", COMMA),
            (")", RPAREN),
            ("+", PLUS),
            ("-", MINUS),
        )
    },
    DECIMAL: "<DECIMAL_LITERAL>",
    FLOATING: "<FLOATING_POINT_LITERAL>",
    STRING: "<STRING_LITERAL>",
    ID: "<ID>",
}

_KEYWORDS = {
    "NOT": NOT,
    "AND": AND,
    "OR": OR,
    "BETWEEN": BETWEEN,
    "IN": IN,
    "TRUE": TRUE,
    "FALSE": FALSE,
    "NULL": NULL,
    "IS": IS,
    "CONTAINS": CONTAINS,
    "STARTSWITH": STARTSWITH,
    "ENDSWITH": ENDSWITH,
}
_OPERATORS = {"<>": NE, "<=": LE, ">=": GE, "=": EQ, ">": GT, "<": LT, "(": LPAREN, ")": RPAREN}
_OPERATORS |= {",": COMMA, "+": PLUS, "-": MINUS}

_DECIMAL = re.compile(r"0|[1-9][0-9]*[lL]?")
_FLOATING = re.compile(
    r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"
)
_STRING = re.compile(r"'(?:''|[^'])*'")
_ID = re.compile(r"[a-zA-Z_$][a-zA-Z0-9_$]*")
_LINE_COMMENT = re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")
_BLOCK_COMMENT = re.compile(r"/\*[^*]*\*+(?:[^*/][^*]*\*+)*/")
_WHITE = " \t\n\r\f"
#: Columns of a tab stop (JavaCC's character stream expands tabs to it when it counts columns).
_TAB = 8


@dataclass(frozen=True, slots=True)
class Token:
    kind: int
    image: str
    line: int
    column: int


class Lexer:
    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        # Line and column of the last character read, counted as JavaCC's character stream counts them:
        # a line break belongs to the line it ends, and the line number moves on with the next character.
        self._line, self._column = 0, 0
        self._after_lf = self._after_cr = False

    def _advance(self, end: int) -> None:
        """Read up to ``end``, counting lines and columns over the characters passed."""
        line, column, after_lf, after_cr = self._line, self._column, self._after_lf, self._after_cr
        if self._pos == 0 and end > 0:
            line = 1
        for char in self._text[self._pos : end]:
            column += 1
            if after_lf:
                after_lf = False
                line, column = line + 1, 1
            elif after_cr:
                after_cr = False
                if char == "\n":
                    after_lf = True
                else:
                    line, column = line + 1, 1
            if char == "\r":
                after_cr = True
            elif char == "\n":
                after_lf = True
            elif char == "\t":
                column -= 1
                column += _TAB - column % _TAB
        self._line, self._column, self._after_lf, self._after_cr = line, column, after_lf, after_cr
        self._pos = max(self._pos, end)

    def next(self) -> Token:
        text, length = self._text, len(self._text)
        while self._pos < length:
            char = text[self._pos]
            if char in _WHITE:
                self._advance(self._pos + 1)
                continue
            comment = _LINE_COMMENT.match(text, self._pos) or _BLOCK_COMMENT.match(text, self._pos)
            if comment is None:
                break
            self._advance(comment.end())
        if self._pos >= length:
            return Token(EOF, "", self._line, self._column)
        start = self._pos
        kind, end = self._match(start)
        self._advance(start + 1)
        line, column = self._line, self._column
        self._advance(end)
        image = text[start:end]
        if kind == ID:
            kind = _KEYWORDS.get(image.upper(), ID)
        return Token(kind, image, line, column)

    def _match(self, start: int) -> tuple[int, int]:
        text = self._text
        best_kind, best_end = -1, start
        for kind, pattern in ((DECIMAL, _DECIMAL), (FLOATING, _FLOATING), (STRING, _STRING), (ID, _ID)):
            found = pattern.match(text, start)
            if found is not None and found.end() > best_end:
                best_kind, best_end = kind, found.end()
        for symbol, kind in _OPERATORS.items():
            if text.startswith(symbol, start) and start + len(symbol) > best_end:
                best_kind, best_end = kind, start + len(symbol)
        if best_kind < 0:
            raise self._lexical_error(start)
        return best_kind, best_end

    def _lexical_error(self, start: int) -> CompileError:
        """JavaCC's ``TokenMgrError``: where reading stopped, the character it stopped at (or the end of the
        text), and what it had read of the token until then."""
        text = self._text
        if text[start] == "'" or text.startswith("/*", start):  # unclosed: read to the end in vain
            stop, after = len(text) - 1, text[start:]
        elif text[start] == "/" and start + 1 < len(text):  # "/" not opening a comment
            stop, after = start + 1, "/"
        else:
            stop, after = start, ""
        self._advance(stop + 1)
        line, column = self._line, self._column
        if stop == len(text) - 1:  # the next read meets the end of the text
            if text[stop] in "\r\n":
                line, column = line + 1, 0
            else:
                column += 1
            encountered = "<EOF> "
            after = text[start:] if stop > start else ""
        else:
            encountered = f'"{escape(text[stop])}" ({ord(text[stop])}), '
        return CompileError(
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line "
            f'{line}, column {column}.  Encountered: {encountered}after : "{escape(after)}"'
        )


def escape(text: str) -> str:
    """JavaCC's ``addEscapes``: control characters, quotes and backslashes written as Java escapes."""
    out = []
    for char in text:
        special = {
            "\b": "\\b",
            "\t": "\\t",
            "\n": "\\n",
            "\f": "\\f",
            "\r": "\\r",
            '"': '\\"',
            "'": "\\'",
            "\\": "\\\\",
        }.get(char)
        if special is not None:
            out.append(special)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
