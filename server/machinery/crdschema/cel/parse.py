"""A CEL expression as a tree, for static checks only: the engine parses (and refuses) syntax itself.

Only rules the engine already accepted reach here, so the parser may assume well-formed input. Positions
are 0-based offsets of the token cel-go reports (a select at its '.', a call at its '(' for a member call,
at its name otherwise), so `self.foo` reports `<input>:1:5`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MACROS = ("all", "exists", "exists_one", "map", "filter")

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>[rR]?[bB]?[rR]?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
        |'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[-+*/%!<>?:.,\[\](){}])
""", re.VERBOSE)


@dataclass(frozen=True)
class Node:
    pos: int


@dataclass(frozen=True)
class Literal(Node):
    kind: str  # "int", "uint", "double", "string", "bytes", "bool", "null"
    text: str


@dataclass(frozen=True)
class Ident(Node):
    name: str


@dataclass(frozen=True)
class Select(Node):
    operand: Node
    field: str
    test: bool = False  # has(operand.field)


@dataclass(frozen=True)
class Call(Node):
    function: str
    target: Node | None
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Comprehension(Node):
    macro: str
    range: Node
    var: str
    args: tuple[Node, ...]  # the predicate or transform (map may carry a filter first)


@dataclass(frozen=True)
class ListExpr(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class MapExpr(Node):
    entries: tuple[tuple[Node, Node], ...]


def parse(text: str) -> Node:
    tokens = [(m.lastgroup or "", m.group(), m.start()) for m in _TOKEN.finditer(text) if m.lastgroup != "space"]
    return _Parser(tokens).expr()


# Binary operators by precedence, lowest first; each maps to cel-go's function name.
_LEVELS: tuple[dict[str, str], ...] = (
    {"||": "_||_"}, {"&&": "_&&_"},
    {"==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "in": "@in"},
    {"+": "_+_", "-": "_-_"}, {"*": "_*_", "/": "_/_", "%": "_%_"},
)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def expr(self) -> Node:
        cond = self.binary(0)
        if self.peek() == "?":
            pos = self.take()[2]
            yes = self.binary(0)
            self.take()  # ':'
            no = self.expr()
            return Call(pos, "_?_:_", None, (cond, yes, no))
        return cond

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _LEVELS[level]:
            op, pos = self.peek(), self.take()[2]
            right = self.binary(level + 1)
            left = Call(pos, _LEVELS[level][op], None, (left, right))
        return left

    def unary(self) -> Node:
        if self.peek() in ("!", "-"):
            op, pos = self.peek(), self.take()[2]
            operand = self.unary()
            return Call(pos, "!_" if op == "!" else "-_", None, (operand,))
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while self.peek() in (".", "["):
            _, _, pos = self.take()
            if self.tokens[self.i - 1][1] == "[":
                index = self.expr()
                self.take()  # ']'
                node = Call(pos, "_[_]", None, (node, index))
                continue
            name = self.take()[1]
            if self.peek() == "(":
                self.take()
                args = self.arguments(")")
                if name in MACROS and len(args) in (2, 3) and isinstance(args[0], Ident):
                    node = Comprehension(pos, name, node, args[0].name, args[1:])
                else:
                    node = Call(pos, name, node, args)
            else:
                node = Select(pos, node, name)
        return node

    def arguments(self, close: str) -> tuple[Node, ...]:
        args: list[Node] = []
        while self.peek() != close:
            args.append(self.expr())
            if self.peek() == ",":
                self.take()
        self.take()
        return tuple(args)

    def primary(self) -> Node:
        kind, text, pos = self.take()
        if kind == "number":
            is_double = any(c in text for c in ".eE") and not text.lower().startswith("0x")
            return Literal(pos, "uint" if text[-1] in "uU" else "double" if is_double else "int", text)
        if kind == "string":
            return Literal(pos, "bytes" if "b" in text[:3].lower() else "string", text)
        if text == "(":
            inner = self.expr()
            self.take()
            return inner
        if text == "[":
            return ListExpr(pos, self.arguments("]"))
        if text == "{":
            entries: list[tuple[Node, Node]] = []
            while self.peek() != "}":
                k = self.expr()
                self.take()  # ':'
                entries.append((k, self.expr()))
                if self.peek() == ",":
                    self.take()
            self.take()
            return MapExpr(pos, tuple(entries))
        if text == ".":  # a leading-dot (root-scoped) identifier
            kind, text, pos = self.take()
        if text in ("true", "false"):
            return Literal(pos, "bool", text)
        if text == "null":
            return Literal(pos, "null", text)
        if self.peek() == "(":
            self.take()
            args = self.arguments(")")
            if text == "has" and len(args) == 1 and isinstance(args[0], Select):
                return Select(args[0].pos, args[0].operand, args[0].field, test=True)
            return Call(pos, text, None, args)
        return Ident(pos, text)
