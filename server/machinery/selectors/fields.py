"""Field selectors: the `fieldSelector` query parameter (`metadata.name=web,status.phase!=Running`).

The grammar is apimachinery's pkg/fields selector.go: comma-separated `field=value`,
`field==value` or `field!=value` terms; in a value `\\`, `,` and `=` must be escaped with
a backslash (nothing else may follow one); the field name is taken literally up to the
first operator. Terms are sorted as raw text before use, as upstream does, which is the
order `str()` prints them in.

Parse errors and unsupported fields are 400 BadRequests whose message clients print,
so both carry kube-apiserver's exact text:

    invalid selector: 'a'; can't understand 'a'
    invalid field selector: invalid escape sequence: \\x
    invalid field selector: unescaped character in value: 61     (Go prints the rune's number)
    field label not supported: spec.foo
    "spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum

from server.machinery.selectors import BadSelector
from server.machinery.validation.names import go_quote


class FieldSelectorError(BadSelector):
    """A field selector kube-apiserver rejects; `message` is its exact error text.

    `kind_resource` names what was being listed when a field was unsupported (for
    logs only: upstream's message does not mention it); it is "" for parse errors.
    """

    def __init__(self, message: str, kind_resource: str = "") -> None:
        super().__init__(message)
        self.kind_resource = kind_resource


class Operator(StrEnum):
    EQUALS = "="
    NOT_EQUALS = "!="


@dataclass(frozen=True, slots=True)
class Requirement:
    """`field = value` or `field != value`; `value` is unescaped. `==` parses to EQUALS."""

    field: str
    operator: Operator
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        # A missing field reads as "" (fields.Set.Get), so `f=` matches objects without f.
        return (fields.get(self.field, "") == self.value) == (self.operator is Operator.EQUALS)

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


@dataclass(frozen=True, slots=True, eq=False)
class Selector:
    """An AND of requirements. Equal selectors have the same requirements in any order."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    def requires_exact_match(self, field: str) -> str | None:
        """The value an `=` requirement on `field` demands (the first one), else None."""
        for r in self.requirements:
            if r.field == field and r.operator is Operator.EQUALS:
                return r.value
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return Counter(self.requirements) == Counter(other.requirements)

    def __hash__(self) -> int:
        return hash(frozenset(Counter(self.requirements).items()))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()

_ESCAPES = {"\\": "\\\\", ",": "\\,", "=": "\\="}


def escape_value(value: str) -> str:
    """fields.EscapeValue: what a client does to put any value in a selector."""
    return "".join(_ESCAPES.get(c, c) for c in value)


def unescape_value(value: str) -> str:
    """fields.UnescapeValue; raises FieldSelectorError on a bad escape or a bare ',' or '='."""
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in _ESCAPES:
                raise FieldSelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            raise FieldSelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if escaped:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(selector: str) -> list[str]:
    """Split at commas that no backslash escapes; the escapes stay in the terms."""
    terms, start, escaped = [], 0, False
    for i, c in enumerate(selector):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """(field, operator, raw value) at the first operator; at one position "!=" wins, then "==", then "="."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse(selector: str) -> Selector:
    """fields.ParseSelector. Raises FieldSelectorError with kube-apiserver's message; "" selects everything."""
    reqs = []
    for term in sorted(_split_terms(selector)):  # byte order, as Go's sort: UTF-8 keeps code point order
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{selector}'; can't understand '{term}'")
        field, op, raw = split
        value = unescape_value(raw)
        reqs.append(Requirement(field, Operator.NOT_EQUALS if op == "!=" else Operator.EQUALS, value))
    return Selector(tuple(reqs))


def check_supported(
    selector: Selector, supported: Collection[str], kind_resource: str, *, default_conversion: bool = False
) -> None:
    """Refuse the first requirement (in selector order) on a field the kind cannot select on.

    Kinds that register a field-label conversion upstream (pods, nodes, events, secrets,
    namespaces, custom resources, ...) say `field label not supported: <field>`. Kinds that
    do not fall back to runtime.DefaultMetaV1FieldSelectorConversion, which says
    `"<field>" is not a known field selector: only "metadata.name", "metadata.namespace"`;
    pass default_conversion=True for those (and `supported` = those two fields).
    """
    for r in selector.requirements:
        if r.field in supported:
            continue
        if default_conversion:
            known = f"{go_quote('metadata.name')}, {go_quote('metadata.namespace')}"
            message = f"{go_quote(r.field)} is not a known field selector: only {known}"
        else:
            message = f"field label not supported: {r.field}"
        raise FieldSelectorError(message, kind_resource)
