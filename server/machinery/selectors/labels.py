"""Label selectors: the `labelSelector` query parameter and metav1.LabelSelector objects.

kubectl and client libraries send `labelSelector=app=web,tier notin (db)` and show a
rejected one's 400 message as is, so this parser is apimachinery's (pkg/labels
selector.go) token for token: the same lexer quirks (a NUL where a token could start
ends the input, one right after a token is dropped; `in` and `notin` are plain words
where a key or value is expected), the same sorted-by-key result,
the same canonical `String()`, and the same error text, e.g. for `a=b=c`

    found '=', expected: ',' or 'end of string'

and, for a bad key, `unable to parse requirement: <nil>: Invalid value: "a b": ...`
(the `<nil>` is upstream's: the parser validates keys against a nil field path).

`from_label_selector` is metav1.LabelSelectorAsSelector (matchLabels/matchExpressions
to the same `Selector`), `validate_label_selector` is metav1validation.ValidateLabelSelector
(the field errors an object with a bad selector gets).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum

from server.machinery.selectors import BadSelector
from server.machinery.validation.names import (
    FieldError,
    go_quote,
    is_label_value,
    is_qualified_name,
    join_errors,
    validate_label_name,
    validate_labels,
)


class SelectorError(BadSelector):
    """A label selector kube-apiserver rejects; `message` is its exact error text."""


class Operator(StrEnum):
    """selection.Operator, with upstream's string values (they appear in error messages)."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_BINARY = (
    Operator.IN, Operator.NOT_IN, Operator.EQUALS, Operator.DOUBLE_EQUALS,
    Operator.NOT_EQUALS, Operator.GREATER_THAN, Operator.LESS_THAN,
)  # fmt: skip
_INFIX = {
    Operator.EQUALS: "=", Operator.DOUBLE_EQUALS: "==", Operator.NOT_EQUALS: "!=",
    Operator.IN: " in ", Operator.NOT_IN: " notin ", Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<",
}  # fmt: skip
_INT64 = re.compile(r"[+-]?[0-9]+")  # strconv.ParseInt(s, 10, 64) syntax: no spaces, no underscores


def _parse_int64(s: str) -> int | None:
    if not _INT64.fullmatch(s):
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `key op values` term. `values` is sorted, as upstream prints and (after parsing) stores it."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op, has = self.operator, self.key in labels
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return has and labels[self.key] in self.values
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return not has or labels[self.key] not in self.values
        if op is Operator.EXISTS:
            return has
        if op is Operator.DOES_NOT_EXIST:
            return not has
        # Gt, Lt: both sides must be integers, else no match.
        have = _parse_int64(labels[self.key]) if has else None
        want = _parse_int64(self.values[0]) if len(self.values) == 1 else None
        if have is None or want is None:
            return False
        return have > want if op is Operator.GREATER_THAN else have < want

    def __str__(self) -> str:
        if self.operator is Operator.EXISTS:
            return self.key
        if self.operator is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(self.values)
        if self.operator in (Operator.IN, Operator.NOT_IN):
            joined = f"({joined})"
        return self.key + _INFIX[self.operator] + joined


@dataclass(frozen=True, slots=True)
class Selector:
    """An AND of requirements, sorted by key. `nothing` is labels.Nothing(): a nil metav1.LabelSelector."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True if this selects everything (upstream's Empty(); Nothing is not empty)."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self.nothing and all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The single value the first requirement on `key` demands (=, == or a one-value in), else None."""
        for r in self.requirements:
            if r.key == key:
                exact = r.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                return r.values[0] if exact and len(r.values) == 1 else None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def new_requirement(
    key: str, operator: Operator, values: Sequence[str] | None, *, path: str | None = None
) -> tuple[Requirement, list[FieldError]]:
    """labels.NewRequirement: the requirement and its field errors. `values=None` is a nil slice.

    `path` None is upstream's nil path: errors name "key", "values", "values[0][key]".
    """

    def at(child: str) -> str:
        return f"{path}.{child}" if path else child

    vals = list(values or ())
    errs: list[FieldError] = []
    if key_errs := is_qualified_name(key):
        errs.append(FieldError.invalid(at("key"), key, "; ".join(key_errs)))
    if operator in (Operator.IN, Operator.NOT_IN):
        if not vals:
            detail = "for 'in', 'notin' operators, values set can't be empty"
            errs.append(FieldError.invalid(at("values"), values, detail))
    elif operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(vals) != 1:
            errs.append(FieldError.invalid(at("values"), values, "exact-match compatibility requires one single value"))
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        if vals:
            detail = "values set must be empty for exists and does not exist"
            errs.append(FieldError.invalid(at("values"), values, detail))
    else:
        if len(vals) != 1:
            detail = "for 'Gt', 'Lt' operators, exactly one value is required"
            errs.append(FieldError.invalid(at("values"), values, detail))
        for i, v in enumerate(vals):
            if _parse_int64(v) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(FieldError.invalid(f"{at('values')}[{i}]", v, detail))
    for i, v in enumerate(vals):
        if value_errs := is_label_value(v):
            errs.append(FieldError.invalid(f"{at('values')}[{i}][{key}]", v, "; ".join(value_errs)))
    return Requirement(key, operator, tuple(sorted(vals))), errs


# --- The lexer. ---


class _Tok(Enum):
    EOS = "end of string"
    CLOSE = ")"
    COMMA = ","
    NOT = "!"
    DOUBLE_EQUALS = "=="
    EQUALS = "="
    GREATER = ">"
    IDENT = "identifier"
    IN = "in"
    LESS = "<"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    OPEN = "("


_LITERAL_TOKENS = {t.value: t for t in _Tok if t not in (_Tok.EOS, _Tok.IDENT)}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[_Tok, str]]:
    """Lexer.Lex until end of string. Go reads bytes and treats a 0 byte as the end."""
    items: list[tuple[_Tok, str]] = []
    pos, n = 0, len(s)
    while True:
        while pos < n and s[pos] in _WHITESPACE:
            pos += 1
        if pos >= n or s[pos] == "\0":
            items.append((_Tok.EOS, ""))
            return items
        start = pos
        if s[pos] in _SPECIAL:  # the longest run of symbols that is still a token
            pos += 1
            while pos < n and s[pos] in _SPECIAL and s[start : pos + 1] in _LITERAL_TOKENS:
                pos += 1
        else:
            while pos < n and s[pos] not in _SPECIAL and s[pos] not in _WHITESPACE and s[pos] != "\0":
                pos += 1
        literal = s[start:pos]
        if pos < n and s[pos] == "\0":  # a NUL right after a token is swallowed with it
            pos += 1
        items.append((_LITERAL_TOKENS.get(literal, _Tok.IDENT), literal))


# --- The parser: a recursive descent over the token list, as upstream's Parser. ---


class _Fail(Exception):
    """A parse error inside one requirement; parse() adds the "unable to parse requirement" prefix."""


class _Parser:
    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    def lookahead(self, values: bool) -> tuple[_Tok, str]:
        tok, lit = self.items[self.pos]
        # Where a value is expected, "in" and "notin" are ordinary words.
        return (_Tok.IDENT, lit) if values and tok in (_Tok.IN, _Tok.NOT_IN) else (tok, lit)

    def consume(self, values: bool) -> tuple[_Tok, str]:
        item = self.lookahead(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok is _Tok.EOS:
                return reqs
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except _Fail as e:
                raise SelectorError(f"unable to parse requirement: {e}") from None
            tok, lit = self.consume(True)
            if tok is _Tok.EOS:
                return reqs
            if tok is not _Tok.COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self.lookahead(True)
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        tok, key = self.consume(True)
        negated = tok is _Tok.NOT
        if negated:
            tok, key = self.consume(True)
        if tok is not _Tok.IDENT:
            raise _Fail(f"found '{key}', expected: identifier")
        if key_errs := is_qualified_name(key):
            raise _Fail(FieldError.invalid("<nil>", key, "; ".join(key_errs)).message())
        if negated or self.lookahead(True)[0] in (_Tok.EOS, _Tok.COMMA):
            return self.checked(key, Operator.DOES_NOT_EXIST if negated else Operator.EXISTS, [])
        op = self.operator()
        values = self.value_set() if op in (Operator.IN, Operator.NOT_IN) else self.exact_value()
        return self.checked(key, op, sorted(values))

    def checked(self, key: str, op: Operator, values: list[str]) -> Requirement:
        req, errs = new_requirement(key, op, values)
        if errs:
            raise _Fail(join_errors(errs))
        return req

    def operator(self) -> Operator:
        tok, lit = self.consume(False)
        ops = {
            _Tok.IN: Operator.IN, _Tok.EQUALS: Operator.EQUALS, _Tok.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
            _Tok.GREATER: Operator.GREATER_THAN, _Tok.LESS: Operator.LESS_THAN, _Tok.NOT_IN: Operator.NOT_IN,
            _Tok.NOT_EQUALS: Operator.NOT_EQUALS,
        }  # fmt: skip
        if tok not in ops:
            raise _Fail(f"found '{lit}', expected: {', '.join(_BINARY)}")
        return ops[tok]

    def value_set(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok is not _Tok.OPEN:
            raise _Fail(f"found '{lit}' expected: '('")  # sic: no comma, as upstream
        tok, lit = self.lookahead(True)
        if tok is _Tok.CLOSE:  # "()" is the one empty value
            self.consume(True)
            return {""}
        if tok not in (_Tok.IDENT, _Tok.COMMA):
            raise _Fail(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        self.consume(True)  # identifiers() returned at a ')'
        return values

    def identifiers(self) -> set[str]:
        """A comma-separated list in which an empty place means the empty value: (a,,b), (,a), (a,)."""
        values: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok is _Tok.IDENT:
                values.add(lit)
                tok2, lit2 = self.lookahead(True)
                if tok2 is _Tok.CLOSE:
                    return values
                if tok2 is not _Tok.COMMA:
                    raise _Fail(f"found '{lit2}', expected: ',' or ')'")
            elif tok is _Tok.COMMA:
                if not values:
                    values.add("")
                tok2, _ = self.lookahead(True)
                if tok2 is _Tok.CLOSE:
                    values.add("")
                    return values
                if tok2 is _Tok.COMMA:
                    self.consume(True)
                    values.add("")
            else:
                raise _Fail(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.lookahead(True)[0] in (_Tok.EOS, _Tok.COMMA):
            return {""}
        tok, lit = self.consume(True)
        if tok is not _Tok.IDENT:
            raise _Fail(f"found '{lit}', expected: identifier")
        return {lit}


def parse(selector: str) -> Selector:
    """labels.Parse. Raises SelectorError with kube-apiserver's message; "" selects everything."""
    reqs = _Parser(selector).parse()
    # Stable, as Go's sort.Sort is for up to 12 requirements (its insertion-sort range);
    # beyond that upstream may reorder requirements that share a key.
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


# --- metav1.LabelSelector. ---

_EXPRESSION_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def _expressions(selector: Mapping[str, object]) -> list[Mapping[str, object]]:
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list) or not all(isinstance(e, Mapping) for e in exprs):
        raise TypeError("matchExpressions must be a list of objects")
    return exprs


def _values(expr: Mapping[str, object]) -> list[str]:
    values = expr.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError("matchExpressions[].values must be a list of strings")
    return values


def _match_labels(selector: Mapping[str, object]) -> Mapping[str, str]:
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
        raise TypeError("matchLabels must be an object of strings")
    return labels


def from_label_selector(selector: Mapping[str, object] | None) -> Selector:
    """metav1.LabelSelectorAsSelector over the selector's JSON form.

    None (an absent selector) selects nothing; {} selects everything. Raises
    SelectorError with upstream's text for a bad key, value or operator.
    """
    if selector is None:
        return NOTHING
    labels, exprs = _match_labels(selector), _expressions(selector)
    reqs: list[Requirement] = []
    for key in sorted(labels):  # a Go map: upstream's first error among several is random
        req, errs = new_requirement(key, Operator.EQUALS, [labels[key]])
        if errs:
            raise SelectorError(join_errors(errs))
        reqs.append(req)
    for expr in exprs:
        raw_op = expr.get("operator", "")
        op = _EXPRESSION_OPERATORS.get(raw_op) if isinstance(raw_op, str) else None
        if op is None:
            raise SelectorError(f"{go_quote(str(raw_op))} is not a valid label selector operator")
        expr_key = expr.get("key", "")
        if not isinstance(expr_key, str):
            raise TypeError("matchExpressions[].key must be a string")
        req, errs = new_requirement(expr_key, op, _values(expr) or None)  # Go copies an empty list to nil
        if errs:
            raise SelectorError(join_errors(errs))
        reqs.append(req)
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def validate_label_selector(selector: Mapping[str, object] | None, path: str) -> list[FieldError]:
    """ValidateLabelSelector (label values in expressions checked): the errors of an object's selector field."""
    if selector is None:
        return []
    errs = validate_labels(_match_labels(selector), f"{path}.matchLabels")
    for i, expr in enumerate(_expressions(selector)):
        at = f"{path}.matchExpressions[{i}]"
        op, values = expr.get("operator", ""), _values(expr)
        key = expr.get("key", "")
        if op in ("In", "NotIn"):
            if not values:
                errs.append(FieldError.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                errs.append(FieldError.forbidden(f"{at}.values", detail))
        else:
            errs.append(FieldError.invalid(f"{at}.operator", op, "not a valid selector operator"))
        errs.extend(validate_label_name(key if isinstance(key, str) else str(key), f"{at}.key"))
        for j, value in enumerate(values):
            errs.extend(FieldError.invalid(f"{at}.values[{j}]", value, m) for m in is_label_value(value))
    return errs
