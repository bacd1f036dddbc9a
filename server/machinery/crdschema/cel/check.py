"""Static checks of one rule against its schema: kube's type errors and cel-go's cost estimate.

Types come from the schema as kube declares them (apiextensions SchemaDeclType): an object with
`properties` is a message whose unknown fields are compile errors (`undefined field 'foo'`), one with
`additionalProperties` a map, arrays lists, date-time strings timestamps. Sizes are the schema's
maxLength/maxItems/maxProperties, or, unbounded, what fits in a 3 MiB request (kube's estimate).

The cost model follows cel-go's checker/cost.go in shape (1 per call, select and variable, strings
traversed at 0.1 per character, regexes at 0.25, comprehensions multiplied by their range's size); it is
an approximation where cel-go prices an overload specially, documented in README's CRD section.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from server.machinery.crdschema.cel.parse import Call, Comprehension, Ident, ListExpr, Literal, MapExpr, Node, Select

MAX_REQUEST_BYTES = 3 * 1024 * 1024
STRING_FACTOR = 0.1
REGEX_FACTOR = 0.25
_TYPE_NAMES = ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn")
_LIST_WALKERS = ("isSorted", "sum", "min", "max", "indexOf", "lastIndexOf", "join")
_STRING_WALKERS = ("contains", "startsWith", "endsWith", "lowerAscii", "upperAscii", "trim", "charAt",
                   "substring", "replace", "split", "indexOf", "lastIndexOf", "isURL", "url", "getScheme",
                   "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery")
_REGEX = ("matches", "find", "findAll")


@dataclass(frozen=True)
class Type:
    kind: str  # object, map, list, string, bytes, int, uint, double, bool, timestamp, duration, null, dyn
    schema: Mapping[str, Any] | None = None
    size: int = 0  # most characters, items or entries
    elem: Type | None = None
    fields: Mapping[str, Type] | None = None  # an actual object's fields (value_type), else from the schema


DYN = Type("dyn")


def min_json_size(s: Mapping[str, Any]) -> int:
    """The fewest bytes a value of this schema serializes to (kube's estimateMinSizeJSON)."""
    if s.get("nullable"):
        return 4
    kind = s.get("type") or ""
    return {"string": 2, "integer": 1, "number": 1, "boolean": 4, "object": 2, "array": 2}.get(kind, 1)


def max_items(s: Mapping[str, Any]) -> int:
    item: Mapping[str, Any] = s["items"] if isinstance(s.get("items"), dict) else {}
    bound = s.get("maxItems")
    return int(bound) if bound is not None else (MAX_REQUEST_BYTES - 2) // (min_json_size(item) + 1)


def max_properties(s: Mapping[str, Any]) -> int:
    value: Mapping[str, Any] = s["additionalProperties"] if isinstance(s.get("additionalProperties"), dict) else {}
    bound = s.get("maxProperties")
    return int(bound) if bound is not None else (MAX_REQUEST_BYTES - 2) // (min_json_size(value) + 4)


def type_of(s: Mapping[str, Any] | None, *, root: bool = False) -> Type:
    if s is None or s.get("x-kubernetes-int-or-string"):
        return DYN
    kind = s.get("type") or ""
    if kind == "object" or s.get("x-kubernetes-embedded-resource"):
        additional = s.get("additionalProperties")
        if isinstance(additional, dict):
            return Type("map", s, max_properties(s), type_of(additional))
        if s.get("properties") or root or s.get("x-kubernetes-embedded-resource"):
            return Type("object", s)
        return DYN if s.get("x-kubernetes-preserve-unknown-fields") else Type("object", s)
    if kind == "array":
        items = s.get("items")
        return Type("list", s, max_items(s), type_of(items if isinstance(items, dict) else None))
    if kind == "string":
        fmt = s.get("format") or ""
        if fmt in ("date-time", "date"):
            return Type("timestamp", s)
        if fmt == "duration":
            return Type("duration", s)
        bound = s.get("maxLength")
        length = int(bound) if bound is not None else MAX_REQUEST_BYTES - 2
        return Type("bytes" if fmt == "byte" else "string", s, length)
    return Type({"integer": "int", "number": "double", "boolean": "bool"}.get(kind, "dyn"), s)


def field_type(parent: Type, name: str, root: bool) -> Type | None:
    """The type of `parent.name`; None: not a field kube declares."""
    if parent.kind == "dyn":
        return DYN
    if parent.kind == "map":
        return parent.elem or DYN
    if parent.fields is not None and name in parent.fields:
        return parent.fields[name]
    if parent.kind != "object" or parent.schema is None:
        return None
    found = (parent.schema.get("properties") or {}).get(name)
    if found is not None:
        return type_of(found)
    if (root or parent.schema.get("x-kubernetes-embedded-resource")) and name in ("apiVersion", "kind"):
        return Type("string", None, MAX_REQUEST_BYTES - 2)
    if (root or parent.schema.get("x-kubernetes-embedded-resource")) and name == "metadata":
        return Type("object", {"properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}})
    if parent.schema.get("x-kubernetes-preserve-unknown-fields"):
        return DYN
    return None


def value_type(s: Mapping[str, Any] | None, value: Any) -> Type:
    """The type of an actual value, its sizes the value's own (the largest item's for a list's items): the
    estimate of what evaluating a rule on it costs."""
    t = type_of(s)
    if s is None:
        return t
    if t.kind == "list" and isinstance(value, list):
        items = s.get("items") if isinstance(s.get("items"), dict) else None
        return Type("list", s, len(value), _merged([value_type(items, v) for v in value]) or t.elem)
    if t.kind == "map" and isinstance(value, dict):
        extra = s.get("additionalProperties") if isinstance(s.get("additionalProperties"), dict) else None
        return Type("map", s, len(value), _merged([value_type(extra, v) for v in value.values()]) or t.elem)
    if t.kind == "object" and isinstance(value, dict):
        props = s.get("properties") or {}
        return Type("object", s, fields={k: value_type(props[k], v) for k, v in value.items() if k in props})
    if t.kind in ("string", "bytes") and isinstance(value, str):
        return Type(t.kind, s, len(value))
    return t


def _merged(types: list[Type]) -> Type | None:
    if not types:
        return None
    first = types[0]
    fields: dict[str, Type] = {}
    for t in types:
        for k, v in (t.fields or {}).items():
            fields[k] = _merged([fields[k], v]) or v if k in fields else v
    return Type(first.kind, first.schema, max(t.size for t in types),
                _merged([t.elem for t in types if t.elem is not None]), fields if first.fields is not None else None)


@dataclass
class Checker:
    """One rule's type errors (position, message) and cost, walking its tree with the variables' types."""

    variables: dict[str, Type]
    root_names: frozenset[str] = frozenset()
    errors: list[tuple[int, str]] = field(default_factory=list)

    def walk(self, node: Node) -> tuple[Type, int]:
        if isinstance(node, Literal):
            kind = "null" if node.kind == "null" else node.kind
            return Type(kind, None, len(node.text)), 0
        if isinstance(node, Ident):
            if node.name in self.variables:
                return self.variables[node.name], 1
            if node.name not in _TYPE_NAMES:
                self.errors.append((node.pos, f"undeclared reference to '{node.name}' (in container '')"))
            return DYN, 1
        if isinstance(node, Select):
            parent, cost = self.walk(node.operand)
            root = isinstance(node.operand, Ident) and node.operand.name in self.root_names
            found = field_type(parent, node.field, root)
            if found is None:
                if parent.kind == "object":
                    self.errors.append((node.pos, f"undefined field '{node.field}'"))
                found = DYN
            return (Type("bool") if node.test else found), cost + 1
        if isinstance(node, Comprehension):
            return self._comprehension(node)
        if isinstance(node, ListExpr):
            walked = [self.walk(item) for item in node.items]
            elem = walked[0][0] if walked else DYN
            return Type("list", None, len(walked), elem), 10 + sum(c for _, c in walked)
        if isinstance(node, MapExpr):
            costs = [self.walk(k)[1] + self.walk(v)[1] for k, v in node.entries]
            return Type("map", None, len(costs), DYN), 30 + sum(costs)
        assert isinstance(node, Call)
        return self._call(node)

    def _comprehension(self, node: Comprehension) -> tuple[Type, int]:
        over, cost = self.walk(node.range)
        elem = DYN
        if over.kind == "list":
            elem = over.elem or DYN
        elif over.kind == "map":
            elem = Type("string", None, MAX_REQUEST_BYTES - 2)
        size = over.size if over.kind in ("list", "map") else 1
        shadowed = self.variables.get(node.var)
        self.variables[node.var] = elem
        walked = [self.walk(arg) for arg in node.args]
        if shadowed is None:
            del self.variables[node.var]
        else:
            self.variables[node.var] = shadowed
        body = sum(c for _, c in walked)
        total = _add(cost, _mul(size, body + 1))
        if node.macro == "map":
            return Type("list", None, size, walked[-1][0]), total
        if node.macro == "filter":
            return Type("list", None, size, elem), total
        return Type("bool"), total

    def _call(self, node: Call) -> tuple[Type, int]:
        walked = [self.walk(arg) for arg in node.args]
        target, target_cost = self.walk(node.target) if node.target is not None else (DYN, 0)
        cost = target_cost + sum(c for _, c in walked)
        name = node.function
        if name in ("_&&_", "_||_"):
            return Type("bool"), cost
        if name == "_?_:_":
            return (walked[1][0], walked[0][1] + max(walked[1][1], walked[2][1]))
        first = target if node.target is not None else (walked[0][0] if walked else DYN)
        operand_size = first.size if first.kind in ("string", "bytes", "list", "map") else 0
        if name in ("_==_", "_!=_"):
            sizes = [t.size for t, _ in walked if t.kind in ("string", "bytes", "list", "map")]
            factor = STRING_FACTOR if walked and walked[0][0].kind in ("string", "bytes") else 1.0
            return Type("bool"), _add(cost, 1 + math.ceil(factor * min(sizes, default=0)))
        if name in ("_<_", "_<=_", "_>_", "_>=_", "!_"):
            return Type("bool"), cost + 1
        if name == "@in":
            container = walked[1][0]
            return Type("bool"), _add(cost, 1 + (container.size if container.kind == "list" else 0))
        if name == "_[_]":
            container = walked[0][0]
            return (container.elem or DYN) if container.kind in ("list", "map") else DYN, cost + 1
        if name == "_+_" and walked:
            left, right = walked[0][0], walked[1][0]
            if left.kind in ("string", "bytes", "list"):
                size = left.size + right.size
                extra = math.ceil(STRING_FACTOR * size) if left.kind != "list" else size
                return Type(left.kind, None, size, left.elem), _add(cost, 1 + extra)
            return left, cost + 1
        if name in _REGEX:
            pattern = walked[-1][0].size if walked else 1
            return (Type("list", None, operand_size, Type("string")) if name == "findAll"
                    else Type("bool" if name == "matches" else "string")), _add(
                        cost, 1 + math.ceil(REGEX_FACTOR * operand_size * max(pattern, 1)))
        if name in _LIST_WALKERS and first.kind == "list":
            return (first.elem or DYN), _add(cost, 1 + operand_size)
        if name in _STRING_WALKERS and first.kind in ("string", "dyn"):
            return _string_result(name, first), _add(cost, 1 + math.ceil(STRING_FACTOR * operand_size))
        if name == "size":
            return Type("int"), cost + 1
        return _call_result(name, walked), cost + 1


def _string_result(name: str, first: Type) -> Type:
    if name in ("contains", "startsWith", "endsWith", "isURL"):
        return Type("bool")
    if name in ("indexOf", "lastIndexOf"):
        return Type("int")
    if name == "split":
        return Type("list", None, first.size, Type("string", None, first.size))
    return Type("string", None, first.size)


def _call_result(name: str, walked: list[tuple[Type, int]]) -> Type:
    simple = {"int": "int", "uint": "uint", "double": "double", "string": "string", "bool": "bool",
              "timestamp": "timestamp", "duration": "duration", "_-_": "", "_*_": "", "_/_": "", "_%_": "",
              "-_": ""}
    if name in simple:
        kind = simple[name] or (walked[0][0].kind if walked else "dyn")
        return Type(kind, None, walked[0][0].size if walked else 0)
    return DYN


def _add(a: int, b: int) -> int:
    return min(a + b, 2**64 - 1)


def _mul(a: int, b: int) -> int:
    return min(a * b, 2**64 - 1)
