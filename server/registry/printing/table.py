"""The `as=Table` and `as=PartialObjectMetadata(List)` renderings of get, list and watch, as kube-apiserver makes them.

Source: k8s.io/apiserver pkg/endpoints/handlers/response.go (optionsForTransform, asTable,
asPartialObjectMetadata, asPartialObjectMetadataList), watch.go (watchEmbeddedEncoder),
kubernetes pkg/printers/tablegenerator.go (GenerateTable). Everything returned is the JSON
form, member order included:

- A Table's `metadata` is the list's ListMeta, or {"resourceVersion": <the object's>} for one
  object; `columnDefinitions` is null where headers are off (every watch event after the
  first); `rows` is null for an empty list under the default convertor (it appends to a nil
  slice), [] under a printer.
- A row is {"cells", "object"}: `object` is the object's metadata as a PartialObjectMetadata
  whose apiVersion is the Table's own (includeObject=Metadata, the default), the whole object
  (Object), or null (None; RawExtension marshals a nil object as null). No printer here sets
  row `conditions` (kube sets them only on pods, "Completed"), so rows never carry them.
- PartialObjectMetadata's metadata is the whole ObjectMeta, creationTimestamp null when unset.
  A PartialObjectMetadataList's `items` is null when empty (built by appending to nil).

Objects come as the core holds them, without resourceVersion, which is passed beside each.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from server.machinery import errors
from server.machinery.meta import META_ORDER
from server.machinery.validation.names import FieldError, go_quote
from server.machinery.values import Obj
from server.registry.printing.columns import DEFAULT_COLUMNS, definition
from server.registry.printing.duration import Since, since
from server.registry.printing.printers import columns_for, ordered
from server.registry.resources import Resource
from server.registry.strategy import Column

META_V1 = "meta.k8s.io/v1"
META_V1BETA1 = "meta.k8s.io/v1beta1"
API_VERSIONS = (META_V1, META_V1BETA1)

INCLUDE_METADATA = "Metadata"
INCLUDE_OBJECT = "Object"
INCLUDE_NONE = "None"
INCLUDE_OBJECT_DETAIL = "must be 'Metadata', 'Object', 'None', or empty"

LIST_META_ORDER = ("selfLink", "resourceVersion", "continue", "remainingItemCount")


def table_options(include_object: str) -> str:
    """The includeObject policy ("" means Metadata), or the 400 ValidateTableOptions gives, e.g.

    Unable to convert to Table as requested: includeObject: Invalid value: "All": must be 'Metadata', ...
    """
    if include_object in ("", INCLUDE_METADATA, INCLUDE_OBJECT, INCLUDE_NONE):
        return include_object or INCLUDE_METADATA
    err = FieldError.invalid("includeObject", include_object, INCLUDE_OBJECT_DETAIL)
    raise errors.bad_request(f"Unable to convert to Table as requested: {err.message()}")


def table(
    resource: Resource,
    rows: Sequence[tuple[Obj, str]],
    *,
    list_meta: Mapping[str, object],
    include_object: str = INCLUDE_METADATA,
    api_version: str = META_V1,
    now_ns: int | None = None,
) -> Obj:
    """A list as a Table: one row per (object, resourceVersion), `list_meta` as the list's ListMeta."""
    now = time.time_ns() if now_ns is None else now_ns
    rendered = table_rows(resource, ordered(resource, list(rows)), include_object=include_object,
                          api_version=api_version, now_ns=now)
    return table_head(resource, list_meta=list_meta, api_version=api_version, rows=rendered)


def table_rows(
    resource: Resource, rows: Sequence[tuple[Obj, str]], *, include_object: str, api_version: str, now_ns: int
) -> list[Obj]:
    """The rows of a list's Table, for (object, resourceVersion) pairs: a large list builds them a slice at a time."""
    columns = columns_for(resource)
    return [_row(resource, columns, obj, rv, include_object, api_version, now_ns) for obj, rv in rows]


def table_head(resource: Resource, *, list_meta: Mapping[str, object], api_version: str, rows: list[Obj]) -> Obj:
    """A list's Table holding `rows`; an empty list's rows are null under the default columns."""
    columns = columns_for(resource)
    rendered = None if not rows and columns is DEFAULT_COLUMNS else rows
    return _table(api_version, list_meta, columns, rendered, headers=True)


def object_table(
    resource: Resource,
    obj: Obj,
    resource_version: str,
    *,
    include_object: str = INCLUDE_METADATA,
    api_version: str = META_V1,
    headers: bool = True,
    now_ns: int | None = None,
) -> Obj:
    """One object as a one-row Table (GET, and each watch event); `headers=False` nulls columnDefinitions."""
    columns = columns_for(resource)
    now = time.time_ns() if now_ns is None else now_ns
    row = _row(resource, columns, obj, resource_version, include_object, api_version, now)
    return _table(api_version, {"resourceVersion": resource_version}, columns, [row], headers=headers)


class TableStream:
    """A watch's Tables: column definitions on the first event only, as kube's watchEmbeddedEncoder.

    Every event's object is rendered, BOOKMARKs included (kube converts them too, so a
    bookmark is a one-row Table of an object with no name); ERROR events keep their Status.
    """

    def __init__(self, resource: Resource, *, include_object: str, api_version: str = META_V1) -> None:
        self._resource = resource
        self._include_object = include_object
        self._api_version = api_version
        self._headers = True

    def event(self, obj: Obj, resource_version: str, *, now_ns: int | None = None) -> Obj:
        rendered = object_table(
            self._resource,
            obj,
            resource_version,
            include_object=self._include_object,
            api_version=self._api_version,
            headers=self._headers,
            now_ns=now_ns,
        )
        self._headers = False
        return rendered


def partial_object_metadata(obj: Obj, resource_version: str, *, api_version: str = META_V1) -> Obj:
    """as=PartialObjectMetadata: kind, apiVersion (meta.k8s.io/v1 or v1beta1) and the whole metadata."""
    _check_version(api_version)
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": _metadata(obj, resource_version)}


def partial_object_metadata_list(
    items: Sequence[tuple[Obj, str]], *, list_meta: Mapping[str, object], api_version: str = META_V1
) -> Obj:
    """as=PartialObjectMetadataList: each item a PartialObjectMetadata with its own kind and apiVersion."""
    _check_version(api_version)
    partials = [partial_object_metadata(obj, rv, api_version=api_version) for obj, rv in items]
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": api_version,
        "metadata": _list_meta(list_meta),
        "items": partials or None,
    }


def partial_shape_error(resource: Resource, *, list_requested: bool) -> errors.ApiError:
    """406 for as=PartialObjectMetadataList on one object (list_requested) or as=PartialObjectMetadata on a list.

    kube names the internal Go type it holds, e.g. "... is a list (*core.ConfigMapList)".
    """
    if list_requested:
        message = "you requested PartialObjectMetadataList, but the requested object is not a list"
        go_type = _go_type(resource, is_list=False)
    else:
        message = "you requested PartialObjectMetadata, but the requested object is a list"
        go_type = _go_type(resource, is_list=True)
    return errors.ApiError(errors.status(406, "NotAcceptable", f"{message} ({go_type})", with_details=False))


def _table(
    api_version: str,
    list_meta: Mapping[str, object],
    columns: Sequence[Column],
    rows: list[Obj] | None,
    *,
    headers: bool,
) -> Obj:
    _check_version(api_version)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": _list_meta(list_meta),
        "columnDefinitions": [definition(c) for c in columns] if headers else None,
        "rows": rows,
    }


def _row(
    resource: Resource,
    columns: Sequence[Column],
    obj: Obj,
    resource_version: str,
    include_object: str,
    api_version: str,
    now_ns: int,
) -> Obj:
    cells = [_cell(column.cell(obj), now_ns) for column in columns]
    return {"cells": cells, "object": _included(resource, obj, resource_version, include_object, api_version)}


def _cell(value: object, now_ns: int) -> object:
    return since(value.timestamp, now_ns) if isinstance(value, Since) else value


def _included(resource: Resource, obj: Obj, resource_version: str, include_object: str, api_version: str) -> Any:
    if include_object in (INCLUDE_METADATA, ""):
        return partial_object_metadata(obj, resource_version, api_version=api_version)
    if include_object == INCLUDE_OBJECT:
        typed = bool(resource.schema.proto_message)
        body = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "metadata")}
        head = {"kind": resource.kind, "apiVersion": resource.api_version}
        return {**head, "metadata": _metadata(obj, resource_version, typed=typed), **body}
    if include_object == INCLUDE_NONE:
        return None
    # asTable's own check; table_options has already refused such a value with its 400.
    raise errors.bad_request(f"unrecognized includeObject value: {go_quote(include_object)}")


def _metadata(obj: Obj, resource_version: str, *, typed: bool = True) -> Obj:
    """The object's metadata with its resourceVersion, in ObjectMeta's order.

    Typed ObjectMeta always prints creationTimestamp (null when unset); an unstructured object
    prints what it holds. Nested values are shared with `obj`.
    """
    source = obj.get("metadata")
    merged: Obj = dict(source) if isinstance(source, dict) else {}
    merged.pop("resourceVersion", None)
    if resource_version:
        merged["resourceVersion"] = resource_version
    if typed:
        merged.setdefault("creationTimestamp", None)
    ordered = {k: merged[k] for k in META_ORDER if k in merged}
    ordered.update((k, v) for k, v in merged.items() if k not in ordered)
    return ordered


def _list_meta(list_meta: Mapping[str, object]) -> Obj:
    """ListMeta's members in Go's order; empty strings and None omitted, as omitempty does."""
    return {k: list_meta[k] for k in LIST_META_ORDER if list_meta.get(k) not in (None, "")}


def _go_type(resource: Resource, *, is_list: bool) -> str:
    """The %T kube prints: the internal type (package core for the legacy group), unstructured for CRs."""
    if not resource.schema.proto_message:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    package = resource.group.split(".")[0] if resource.group else "core"
    return f"*{package}.{resource.kind}{'List' if is_list else ''}"


def _check_version(api_version: str) -> None:
    """Negotiation admits only meta.k8s.io/v1 and v1beta1 (anything else is its 406), so others are bugs."""
    if api_version not in API_VERSIONS:
        raise ValueError(f"no Table or PartialObjectMetadata in {api_version!r}")
