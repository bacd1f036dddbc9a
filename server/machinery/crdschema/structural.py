"""A CRD version's openAPIV3Schema as a tree: kube's structural schema, read once per CRD version.

Built from the schema's JSON form (as server/machinery/codec/jsonschemaprops.py prints it). Every node keeps what
pruning, defaulting, value validation and apply shapes need, ready to use:

    {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1, "default": 1}}}
    -> Structural(type="object", properties={"replicas": Structural(type="integer", minimum=1, default=1)})

Value validations under allOf/anyOf/oneOf/not are kept as nested Structurals too (they never declare
fields: pruning and defaulting only follow `properties`, `items` and `additionalProperties`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ABSENT: Any = object()  # no `default:` (a default may itself be any JSON value but null)


@dataclass(frozen=True, eq=False)
class Structural:
    type: str = ""
    format: str = ""
    description: str = ""
    nullable: bool = False
    default: Any = ABSENT
    properties: Mapping[str, Structural] = field(default_factory=dict)
    items: Structural | None = None
    # additionalProperties: a schema for every other key; True alone keeps any value (like preserve-unknown).
    additional: Structural | None = None
    additional_allowed: bool = False
    preserve_unknown: bool = False
    int_or_string: bool = False
    embedded: bool = False
    list_type: str = ""
    list_map_keys: tuple[str, ...] = ()
    map_type: str = ""
    # value validations
    enum: tuple[Any, ...] | None = None
    pattern: str = ""
    compiled: re.Pattern[str] | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    multiple_of: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    min_properties: int | None = None
    max_properties: int | None = None
    required: tuple[str, ...] = ()
    all_of: tuple[Structural, ...] = ()
    any_of: tuple[Structural, ...] = ()
    one_of: tuple[Structural, ...] = ()
    not_: Structural | None = None
    has_defaults: bool = False  # a default anywhere below (or here)
    # Whether a scalar value needs more than its type checked (enum, format, bounds, pattern, lengths), and
    # whether allOf/anyOf/oneOf/not apply: the fast path of value validation (values.py) skips the rest.
    scalar_checks: bool = False
    junctors: bool = False

    def child(self, key: str) -> Structural | None:
        """The schema of an object's key: its property, else additionalProperties."""
        found = self.properties.get(key)
        return found if found is not None else self.additional

    @property
    def keeps_unknown(self) -> bool:
        """Unknown keys of an object of this schema are kept (not pruned)."""
        return self.preserve_unknown or (self.additional_allowed and self.additional is None)


def parse(schema: Mapping[str, Any] | None) -> Structural | None:
    """The tree of a JSON schema (None for none). Patterns that do not compile are kept as text only (the
    CRD's validation refuses them before any object is checked)."""
    if schema is None:
        return None
    return _parse(schema)


def _parse(s: Mapping[str, Any]) -> Structural:
    properties = {key: _parse(value) for key, value in (s.get("properties") or {}).items()}
    items = s.get("items")
    items_schema = _parse(items) if isinstance(items, dict) else None
    additional = s.get("additionalProperties")
    additional_schema = _parse(additional) if isinstance(additional, dict) else None
    pattern = s.get("pattern") or ""
    compiled = None
    if pattern:
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = None
    enum = s.get("enum")
    nested = {name: tuple(_parse(x) for x in s.get(name) or () if isinstance(x, dict))
              for name in ("allOf", "anyOf", "oneOf")}
    not_ = s.get("not")
    default = s.get("default", ABSENT)
    if default is None:
        default = ABSENT
    below = [*properties.values(), items_schema, additional_schema]
    return Structural(
        type=s.get("type") or "",
        format=s.get("format") or "",
        description=s.get("description") or "",
        nullable=bool(s.get("nullable")),
        default=default,
        properties=properties,
        items=items_schema,
        additional=additional_schema,
        additional_allowed=additional is True or isinstance(additional, dict),
        preserve_unknown=bool(s.get("x-kubernetes-preserve-unknown-fields")),
        int_or_string=bool(s.get("x-kubernetes-int-or-string")),
        embedded=bool(s.get("x-kubernetes-embedded-resource")),
        list_type=s.get("x-kubernetes-list-type") or "",
        list_map_keys=tuple(s.get("x-kubernetes-list-map-keys") or ()),
        map_type=s.get("x-kubernetes-map-type") or "",
        enum=tuple(enum) if isinstance(enum, list) else None,
        pattern=pattern,
        compiled=compiled,
        minimum=s.get("minimum"),
        maximum=s.get("maximum"),
        exclusive_minimum=bool(s.get("exclusiveMinimum")),
        exclusive_maximum=bool(s.get("exclusiveMaximum")),
        multiple_of=s.get("multipleOf"),
        min_length=s.get("minLength"),
        max_length=s.get("maxLength"),
        min_items=s.get("minItems"),
        max_items=s.get("maxItems"),
        unique_items=bool(s.get("uniqueItems")),
        min_properties=s.get("minProperties"),
        max_properties=s.get("maxProperties"),
        required=tuple(s.get("required") or ()),
        all_of=nested["allOf"],
        any_of=nested["anyOf"],
        one_of=nested["oneOf"],
        not_=_parse(not_) if isinstance(not_, dict) else None,
        has_defaults=default is not ABSENT or any(b is not None and b.has_defaults for b in below),
        scalar_checks=enum is not None or any(s.get(k) is not None for k in _SCALAR_CHECKS),
        junctors=any(nested.values()) or isinstance(not_, dict),
    )


_SCALAR_CHECKS = ("format", "pattern", "minimum", "maximum", "multipleOf", "minLength", "maxLength")
