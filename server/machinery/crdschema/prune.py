"""Pruning and defaulting: an object as a CRD version's structural schema keeps it, in one pass.

kube-apiserver decodes a custom resource in three steps, done here together on a fresh copy:

1. prune (structuralpruning.Prune): a key the schema does not declare is dropped and reported, unless the
   object's schema keeps unknown fields (x-kubernetes-preserve-unknown-fields, or additionalProperties
   true); values of additionalProperties maps follow that schema; at the resource root (and in embedded
   resources) apiVersion, kind and metadata are kept;
2. drop null values of non-nullable properties that have no default
   (structuraldefaulting.PruneNonNullableNullsWithoutDefaults);
3. default (structuraldefaulting.Default): a property with `default:` that is absent (or a non-nullable
   null) gets a copy of the default, itself defaulted further down.

Reported paths are kube's: `spec.foo`, `spec.items[0].foo`, map keys as `.key`. Example, with a schema
declaring only spec.replicas (default 1):
    {"spec": {"color": "red"}} -> ({"spec": {"replicas": 1}}, ["spec.color"])
A value of the wrong type is left as it is: value validation (values.py) reports it.
"""

from __future__ import annotations

from typing import Any

from server.machinery.crdschema.structural import ABSENT, Structural
from server.machinery.patch.values import copy_json

RESOURCE_META = frozenset({"apiVersion", "kind", "metadata"})


def coerce(value: Any, schema: Structural, path: str, unknown: list[str], *, resource_root: bool = False) -> Any:
    """The value pruned and defaulted (a new value; the input is not changed); unknown gets the pruned paths."""
    kind = type(value)
    if kind is dict:
        return _object(value, schema, path, unknown, resource_root or schema.embedded)
    if kind is list:
        items = schema.items
        if items is None:
            return copy_json(value)
        out = []
        for index, item in enumerate(value):
            if item is None and items.default is not ABSENT and not items.nullable:
                item = items.default
            out.append(coerce(item, items, f"{path}[{index}]", unknown))
        return out
    return value


def default_only(value: Any, schema: Structural) -> Any:
    """coerce without reporting: what reads apply to stored objects (kube defaults on read from storage)."""
    return coerce(value, schema, "", [], resource_root=True)


def _object(value: dict[str, Any], schema: Structural, path: str, unknown: list[str], resource: bool) -> Any:
    out: dict[str, Any] = {}
    properties = schema.properties
    additional = schema.additional
    for key, item in value.items():
        if resource and key in RESOURCE_META:
            out[key] = item if key != "metadata" else copy_json(item)
            continue
        here = f"{path}.{key}" if path else key
        prop = properties.get(key)
        if prop is not None:
            if item is None and not prop.nullable:
                continue  # a non-nullable null: dropped, or defaulted below
            out[key] = coerce(item, prop, here, unknown)
        elif additional is not None:
            if item is None and additional.default is not ABSENT and not additional.nullable:
                item = additional.default
            out[key] = coerce(item, additional, here, unknown)
        elif schema.keeps_unknown:
            out[key] = copy_json(item)
        else:
            unknown.append(here)
    if schema.has_defaults:
        for key, prop in properties.items():
            if prop.default is not ABSENT and key not in out:
                out[key] = coerce(copy_json(prop.default), prop, "", [])
    return out
