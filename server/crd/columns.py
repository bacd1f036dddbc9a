"""A CRD version's additionalPrinterColumns as Table columns, as apiextensions-apiserver's tableconvertor builds them.

Every table starts with Name; then each printer column, whose cell is its JSONPath evaluated against the
object (the first result; none is a null cell), typed by the column's type: integer, number and boolean
cells keep their JSON values, string cells are printed as kubectl's JSONPath printer prints a value
(`map[a:1]` for an object), date cells are ages ("5m"). A version without printer columns gets Age
(`.metadata.creationTimestamp`, type date).

JSONPath is evaluated with jsonpath-ng (pyproject.toml says why): a column's `.status.conditions[?(@.type==
"Ready")].status` is `$` + the path; a key with dots is written `app\\.kubernetes\\.io/name`, as in kubectl.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server.machinery.values import Obj
from server.registry.printing.columns import CREATION_TIMESTAMP_DESCRIPTION, NAME
from server.registry.printing.duration import Since
from server.registry.strategy import Column

if TYPE_CHECKING:
    from jsonpath_ng import JSONPath

AGE = {"name": "Age", "type": "date", "description": CREATION_TIMESTAMP_DESCRIPTION,
       "jsonPath": ".metadata.creationTimestamp"}
_ESCAPED_SEGMENT = re.compile(r"\.((?:[^.\[\]\\]|\\.)*\\\.(?:[^.\[\]\\]|\\.)*)")


def columns(printer_columns: list[dict[str, Any]]) -> tuple[Column, ...]:
    """Name, then the printer columns (Age when there are none)."""
    out = [NAME]
    for column in printer_columns or [AGE]:
        json_path = column.get("jsonPath") or ""
        description = column.get("description") or (
            f"Custom resource definition column (in JSONPath format): {json_path}")
        out.append(Column(column.get("name") or "", column.get("type") or "", description,
                          cell(column.get("type") or "", json_path), format=column.get("format") or "",
                          priority=int(column.get("priority") or 0)))
    return tuple(out)


def compile_path(json_path: str) -> JSONPath | None:
    """The jsonpath-ng expression of a kubectl-style path (None when it does not parse). jsonpath-ng is
    imported on the first path compiled (its import is ~5-40 ms of a start that serves no CRD)."""
    from jsonpath_ng.ext.parser import parse

    text = _ESCAPED_SEGMENT.sub(lambda m: "['" + m.group(1).replace("\\.", ".") + "']", json_path.strip())
    text = text.removeprefix("{").removesuffix("}")
    try:
        return parse("$" + text if text.startswith((".", "[")) else "$." + text)
    except Exception:  # jsonpath-ng raises lexer, parser and plain errors
        return None


def first(expression: JSONPath | None, obj: Obj) -> Any:
    """The first value the expression finds, or None."""
    if expression is None:
        return None
    try:
        found = expression.find(obj)
    except Exception:  # jsonpath-ng raises plain errors for a filter over the wrong type
        return None
    return found[0].value if found else None


def cell(kind: str, json_path: str) -> Callable[[Obj], object]:
    expression = compile_path(json_path)

    def value(obj: Obj) -> object:
        found = first(expression, obj)
        if found is None:
            return None
        return typed(kind, found)

    return value


def typed(kind: str, value: Any) -> object:
    """cellForJSONValue, and the JSONPath printer for string columns."""
    if kind == "string":
        return value if isinstance(value, str) else go_print(value)
    if kind == "integer":
        if isinstance(value, bool):
            return None
        return int(value) if isinstance(value, int | float) else None
    if kind == "number":
        if isinstance(value, bool):
            return None
        return float(value) if isinstance(value, int | float) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        return Since(value) if isinstance(value, str) else None
    return None


def go_print(value: Any) -> str:
    """fmt.Fprint of a JSON value: map[a:1 b:x], [a b], true, 1.5."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else json.dumps(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_print(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    return "<nil>"


