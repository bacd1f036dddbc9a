"""Server-side printing against kube-apiserver's wire form: golden Tables, ages, PartialObjectMetadata.

Expected documents are written out in full, and compared as JSON text too, so member order
counts. Sources: kubernetes pkg/printers/internalversion/printers.go, k8s.io/apiserver
pkg/registry/rest/table.go and pkg/endpoints/handlers/response.go, apimachinery's
util/duration (its duration_test.go cases are the HumanDuration table below).
"""

from __future__ import annotations

import json

import pytest

from server.kinds import CONFIG_MAPS, NAMESPACES, SECRETS
from server.machinery import errors
from server.machinery.codec import gotime
from server.machinery.schema import JsonSchema
from server.machinery.values import Obj
from server.registry.printing import (
    META_V1BETA1,
    TableStream,
    columns_for,
    human_duration,
    object_table,
    partial_object_metadata,
    partial_object_metadata_list,
    partial_shape_error,
    since,
    table,
    table_options,
)
from server.registry.printing.columns import DEFAULT_COLUMNS
from server.registry.resources import Resource
from server.registry.strategy import Column, Strategy

S = 10**9
M = 60 * S
H = 60 * M
D = 24 * H
Y = 365 * D
MS = 10**6

NOW = "2024-05-01T12:00:00Z"
NOW_NS = gotime.parse(NOW, gotime.RFC3339)[0] * S

NAME = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": (
        "Name must be unique within a namespace. Is required when creating resources, although some resources "
        "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
        "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
    ),
    "priority": 0,
}
CREATION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It "
    "is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
AGE = {"name": "Age", "type": "string", "format": "", "description": CREATION, "priority": 0}
CREATED_AT = {"name": "Created At", "type": "date", "format": "", "description": CREATION, "priority": 0}

WIDGETS = Resource(
    group="example.com",
    version="v1",
    resource="widgets",
    kind="Widget",
    singular="widget",
    namespaced=True,
    schema=JsonSchema(),
)


def assert_json(actual: object, expected: object) -> None:
    assert actual == expected
    assert json.dumps(actual) == json.dumps(expected)  # member order too


def meta(name: str, created: str | None, **extra: object) -> Obj:
    out: Obj = {"name": name, **extra}
    if created is not None:
        out["creationTimestamp"] = created
    return out


def partial(metadata: Obj, api_version: str = "meta.k8s.io/v1") -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": metadata}


# --- ages -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nanos", "want"),
    [
        # apimachinery TestHumanDuration
        (S, "1s"),
        (70 * S, "70s"),
        (190 * S, "3m10s"),
        (70 * M, "70m"),
        (47 * H, "47h"),
        (49 * H, "2d1h"),
        ((8 * 24 + 2) * H, "8d"),
        (367 * D, "367d"),
        ((365 * 2 * 24 + 25) * H, "2y1d"),
        ((365 * 8 * 24 + 2) * H, "8y"),
        # apimachinery TestHumanDurationBoundaries
        (-2 * S, "<invalid>"),
        (-2 * S + 1, "0s"),
        (0, "0s"),
        (S - MS, "0s"),
        (2 * M - MS, "119s"),
        (2 * M, "2m"),
        (2 * M + S, "2m1s"),
        (10 * M - MS, "9m59s"),
        (10 * M, "10m"),
        (10 * M + S, "10m"),
        (3 * H - MS, "179m"),
        (3 * H, "3h"),
        (3 * H + M, "3h1m"),
        (8 * H - MS, "7h59m"),
        (8 * H, "8h"),
        (8 * H + 59 * M, "8h"),
        (2 * D - MS, "47h"),
        (2 * D, "2d"),
        (2 * D + H, "2d1h"),
        (8 * D - MS, "7d23h"),
        (8 * D, "8d"),
        (8 * D + 23 * H, "8d"),
        (2 * Y - MS, "729d"),
        (2 * Y, "2y"),
        (2 * Y + 23 * H, "2y"),
        (2 * Y + 23 * H + 59 * M, "2y"),
        (2 * Y + D - MS, "2y"),
        (2 * Y + D, "2y1d"),
        (3 * Y, "3y"),
        (7 * Y, "7y"),
        (8 * Y - MS, "7y364d"),
        (8 * Y, "8y"),
        (8 * Y + 364 * D, "8y"),
        (9 * Y, "9y"),
        # more of each shape
        (5 * S, "5s"),
        (-S - MS, "0s"),  # int(-1.001s) is -1: clock skew under 2s reads as now
        (182 * S, "3m2s"),
        (5 * M, "5m"),
        (5 * H, "5h"),
        (5 * H + 30 * M + 59 * S, "5h30m"),
        (3 * D, "3d"),
        (3 * D + 4 * H + 59 * M, "3d4h"),
        (100 * D, "100d"),
        (2 * Y + 45 * D, "2y45d"),
        (30 * Y, "30y"),
    ],
)
def test_human_duration(nanos: int, want: str) -> None:
    assert human_duration(nanos) == want


@pytest.mark.parametrize(
    ("timestamp", "want"),
    [
        (None, "<unknown>"),
        ("", "<unknown>"),
        ("0001-01-01T00:00:00Z", "<unknown>"),  # Go's zero time: IsZero
        ("2024-05-01T11:59:55Z", "5s"),
        ("2024-05-01T11:56:58Z", "3m2s"),
        ("2024-05-01T13:00:00+02:00", "60m"),  # offsets count: that is 11:00Z, and 60m < 3h
        ("2024-05-01T12:00:01Z", "0s"),  # a second ahead of the server's clock
        ("2024-05-01T12:00:05Z", "<invalid>"),
        ("2022-03-18T12:00:00Z", "2y45d"),
        ("yesterday", "<invalid>"),
        (1714564800, "<invalid>"),
    ],
)
def test_since(timestamp: object, want: str) -> None:
    assert since(timestamp, NOW_NS) == want


# --- golden list Tables -------------------------------------------------------------------------

CM_FULL = {
    "metadata": meta(
        "settings",
        "2024-05-01T11:59:55Z",
        namespace="dev",
        uid="u-1",
        labels={"app": "web"},
    ),
    "data": {"a": "1", "b": "2"},
    "binaryData": {"c": "AA=="},
}
CM_EMPTY = {"metadata": meta("empty", "2024-04-28T12:00:00Z", namespace="dev", uid="u-2")}

NS_ACTIVE = {
    "metadata": meta("default", "2024-03-01T12:00:00Z", uid="n-1"),
    "spec": {"finalizers": ["kubernetes"]},
    "status": {"phase": "Active"},
}
NS_TERMINATING = {
    "metadata": meta("old", "2024-05-01T09:00:00Z", uid="n-2", deletionTimestamp="2024-05-01T11:00:00Z"),
    "spec": {"finalizers": ["kubernetes"]},
    "status": {"phase": "Terminating"},
}

SECRET_OPAQUE = {
    "metadata": meta("token", "2024-05-01T11:50:00Z", namespace="dev", uid="s-1"),
    "data": {"user": "YWRtaW4=", "password": "c2VjcmV0"},
    "type": "Opaque",
}
SECRET_TLS = {
    "metadata": meta("tls", "2024-04-30T02:00:00Z", namespace="dev", uid="s-2"),
    "data": {"tls.crt": "Y3J0", "tls.key": "a2V5", "ca.crt": "Y2E="},
    "type": "kubernetes.io/tls",
}

WIDGET = {"metadata": meta("w", "2024-05-01T11:00:00+01:00", namespace="dev", uid="w-1"), "spec": {"size": 3}}
WIDGET_UNSET = {"metadata": {"name": "v", "namespace": "dev"}, "spec": {}}


@pytest.mark.parametrize(
    ("resource", "rows", "list_meta", "expected"),
    [
        pytest.param(
            CONFIG_MAPS,
            [(CM_FULL, "11"), (CM_EMPTY, "12")],
            {"resourceVersion": "20", "continue": "tok", "remainingItemCount": 3},
            {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "20", "continue": "tok", "remainingItemCount": 3},
                "columnDefinitions": [
                    NAME,
                    {
                        "name": "Data",
                        "type": "string",
                        "format": "",
                        "description": (
                            "Data contains the configuration data. Each key must consist of alphanumeric characters, "
                            "'-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The "
                            "keys stored in Data must not overlap with the keys in the BinaryData field, this is "
                            "enforced during validation process."
                        ),
                        "priority": 0,
                    },
                    AGE,
                ],
                "rows": [
                    {
                        "cells": ["settings", 3, "5s"],  # data + binaryData keys
                        "object": partial(
                            {
                                "name": "settings",
                                "namespace": "dev",
                                "uid": "u-1",
                                "resourceVersion": "11",
                                "creationTimestamp": "2024-05-01T11:59:55Z",
                                "labels": {"app": "web"},
                            }
                        ),
                    },
                    {
                        "cells": ["empty", 0, "3d"],
                        "object": partial(
                            {
                                "name": "empty",
                                "namespace": "dev",
                                "uid": "u-2",
                                "resourceVersion": "12",
                                "creationTimestamp": "2024-04-28T12:00:00Z",
                            }
                        ),
                    },
                ],
            },
            id="configmaps",
        ),
        pytest.param(
            NAMESPACES,
            [(NS_ACTIVE, "3"), (NS_TERMINATING, "9")],
            {"resourceVersion": "9"},
            {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "9"},
                "columnDefinitions": [
                    NAME,
                    {
                        "name": "Status",
                        "type": "string",
                        "format": "",
                        "description": "The status of the namespace",
                        "priority": 0,
                    },
                    AGE,
                ],
                "rows": [
                    {
                        "cells": ["default", "Active", "61d"],
                        "object": partial(
                            {
                                "name": "default",
                                "uid": "n-1",
                                "resourceVersion": "3",
                                "creationTimestamp": "2024-03-01T12:00:00Z",
                            }
                        ),
                    },
                    {
                        # A terminating object gets no row conditions: only pods' printer sets them.
                        "cells": ["old", "Terminating", "3h"],
                        "object": partial(
                            {
                                "name": "old",
                                "uid": "n-2",
                                "resourceVersion": "9",
                                "creationTimestamp": "2024-05-01T09:00:00Z",
                                "deletionTimestamp": "2024-05-01T11:00:00Z",
                            }
                        ),
                    },
                ],
            },
            id="namespaces",
        ),
        pytest.param(
            SECRETS,
            [(SECRET_OPAQUE, "4"), (SECRET_TLS, "5")],
            {"resourceVersion": "8"},
            {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "8"},
                "columnDefinitions": [
                    NAME,
                    {
                        "name": "Type",
                        "type": "string",
                        "format": "",
                        "description": (
                            "Used to facilitate programmatic handling of secret data. More info: "
                            "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
                        ),
                        "priority": 0,
                    },
                    {
                        "name": "Data",
                        "type": "string",
                        "format": "",
                        "description": (
                            "Data contains the secret data. Each key must consist of alphanumeric characters, '-', "
                            "'_' or '.'. The serialized form of the secret data is a base64 encoded string, "
                            "representing the arbitrary (possibly non-string) data value here. Described in "
                            "https://tools.ietf.org/html/rfc4648#section-4"
                        ),
                        "priority": 0,
                    },
                    AGE,
                ],
                "rows": [
                    {
                        "cells": ["token", "Opaque", 2, "10m"],
                        "object": partial(
                            {
                                "name": "token",
                                "namespace": "dev",
                                "uid": "s-1",
                                "resourceVersion": "4",
                                "creationTimestamp": "2024-05-01T11:50:00Z",
                            }
                        ),
                    },
                    {
                        "cells": ["tls", "kubernetes.io/tls", 3, "34h"],
                        "object": partial(
                            {
                                "name": "tls",
                                "namespace": "dev",
                                "uid": "s-2",
                                "resourceVersion": "5",
                                "creationTimestamp": "2024-04-30T02:00:00Z",
                            }
                        ),
                    },
                ],
            },
            id="secrets",
        ),
        pytest.param(
            WIDGETS,
            [(WIDGET, "6"), (WIDGET_UNSET, "7")],
            {"resourceVersion": "7"},
            {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "7"},
                "columnDefinitions": [NAME, CREATED_AT],
                "rows": [
                    {
                        "cells": ["w", "2024-05-01T10:00:00Z"],  # the time itself, in UTC
                        "object": partial(
                            {
                                "name": "w",
                                "namespace": "dev",
                                "uid": "w-1",
                                "resourceVersion": "6",
                                "creationTimestamp": "2024-05-01T11:00:00+01:00",
                            }
                        ),
                    },
                    {
                        "cells": ["v", "0001-01-01T00:00:00Z"],  # Go's zero time, formatted
                        "object": partial(
                            {
                                "name": "v",
                                "namespace": "dev",
                                "resourceVersion": "7",
                                "creationTimestamp": None,
                            }
                        ),
                    },
                ],
            },
            id="default-convertor",
        ),
    ],
)
def test_list_table(resource: Resource, rows: list[tuple[Obj, str]], list_meta: Obj, expected: Obj) -> None:
    before = json.dumps(rows)
    assert_json(table(resource, rows, list_meta=list_meta, now_ns=NOW_NS), expected)
    assert json.dumps(rows) == before  # the objects are not modified


@pytest.mark.parametrize(
    ("resource", "rows"),
    [
        (CONFIG_MAPS, []),  # printers make([]TableRow, 0, n)
        (WIDGETS, None),  # the default convertor appends to a nil slice
    ],
)
def test_empty_list_rows(resource: Resource, rows: object) -> None:
    got = table(resource, [], list_meta={"resourceVersion": "5"}, now_ns=NOW_NS)
    assert got["rows"] == rows
    assert got["metadata"] == {"resourceVersion": "5"}
    assert got["columnDefinitions"] is not None


# --- includeObject and versions ---------------------------------------------------------------


def full_config_map(resource_version: str) -> Obj:
    return {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "settings",
            "namespace": "dev",
            "uid": "u-1",
            "resourceVersion": resource_version,
            "creationTimestamp": "2024-05-01T11:59:55Z",
            "labels": {"app": "web"},
        },
        "data": {"a": "1", "b": "2"},
        "binaryData": {"c": "AA=="},
    }


@pytest.mark.parametrize(
    ("include_object", "api_version", "row_object"),
    [
        ("Metadata", "meta.k8s.io/v1", partial(full_config_map("11")["metadata"])),
        ("", "meta.k8s.io/v1", partial(full_config_map("11")["metadata"])),
        # The row's PartialObjectMetadata takes the Table's group version.
        ("Metadata", META_V1BETA1, partial(full_config_map("11")["metadata"], META_V1BETA1)),
        ("Object", "meta.k8s.io/v1", full_config_map("11")),
        ("Object", META_V1BETA1, full_config_map("11")),
        ("None", "meta.k8s.io/v1", None),  # RawExtension marshals a nil object as null
    ],
)
def test_include_object(include_object: str, api_version: str, row_object: Obj | None) -> None:
    got = table(
        CONFIG_MAPS,
        [(CM_FULL, "11")],
        list_meta={"resourceVersion": "20"},
        include_object=include_object,
        api_version=api_version,
        now_ns=NOW_NS,
    )
    assert got["apiVersion"] == api_version
    assert_json(got["rows"], [{"cells": ["settings", 3, "5s"], "object": row_object}])


def test_include_object_of_a_custom_resource_is_the_object_as_stored() -> None:
    got = table(WIDGETS, [(WIDGET_UNSET, "7")], list_meta={}, include_object="Object", now_ns=NOW_NS)
    assert_json(
        got["rows"][0]["object"],
        {
            "kind": "Widget",
            "apiVersion": "example.com/v1",
            "metadata": {"name": "v", "namespace": "dev", "resourceVersion": "7"},
            "spec": {},
        },
    )
    assert got["metadata"] == {}


@pytest.mark.parametrize(
    ("value", "policy"), [("", "Metadata"), ("Metadata", "Metadata"), ("Object", "Object"), ("None", "None")]
)
def test_table_options(value: str, policy: str) -> None:
    assert table_options(value) == policy


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "All",
            'Unable to convert to Table as requested: includeObject: Invalid value: "All": '
            "must be 'Metadata', 'Object', 'None', or empty",
        ),
        (
            "metadata",  # case matters
            'Unable to convert to Table as requested: includeObject: Invalid value: "metadata": '
            "must be 'Metadata', 'Object', 'None', or empty",
        ),
    ],
)
def test_table_options_refuses_unknown_policies(value: str, message: str) -> None:
    with pytest.raises(errors.ApiError) as raised:
        table_options(value)
    status = raised.value.status
    assert (status.code, status.reason, status.message, status.status) == (400, "BadRequest", message, "Failure")
    assert not status.HasField("details")


def test_table_refuses_an_unknown_policy_as_as_table_does() -> None:
    with pytest.raises(errors.ApiError) as raised:
        table(CONFIG_MAPS, [(CM_FULL, "1")], list_meta={}, include_object="Everything", now_ns=NOW_NS)
    assert (raised.value.code, raised.value.status.message) == (400, 'unrecognized includeObject value: "Everything"')


def test_versions_outside_meta_v1_and_v1beta1_are_bugs() -> None:
    with pytest.raises(ValueError, match="v1alpha1"):
        table(CONFIG_MAPS, [], list_meta={}, api_version="meta.k8s.io/v1alpha1")
    with pytest.raises(ValueError, match="v2"):
        partial_object_metadata(CM_FULL, "1", api_version="meta.k8s.io/v2")


# --- one object: GET and watch ------------------------------------------------------------------


def test_get_is_a_one_row_table_versioned_like_its_object() -> None:
    got = object_table(NAMESPACES, NS_ACTIVE, "3", include_object="None", api_version=META_V1BETA1, now_ns=NOW_NS)
    assert_json(
        got,
        {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1beta1",
            "metadata": {"resourceVersion": "3"},
            "columnDefinitions": [
                NAME,
                {
                    "name": "Status",
                    "type": "string",
                    "format": "",
                    "description": "The status of the namespace",
                    "priority": 0,
                },
                AGE,
            ],
            "rows": [{"cells": ["default", "Active", "61d"], "object": None}],
        },
    )


def test_a_get_under_the_default_convertor_has_its_row() -> None:
    got = object_table(WIDGETS, WIDGET, "6", now_ns=NOW_NS)
    assert got["columnDefinitions"] == [NAME, CREATED_AT]
    assert got["rows"][0]["cells"] == ["w", "2024-05-01T10:00:00Z"]


def test_watch_sends_column_definitions_on_the_first_event_only() -> None:
    stream = TableStream(CONFIG_MAPS, include_object="Metadata")
    first = stream.event(CM_FULL, "11", now_ns=NOW_NS)
    bookmark = stream.event({"metadata": {}}, "15", now_ns=NOW_NS)
    later = stream.event(CM_EMPTY, "16", now_ns=NOW_NS)
    assert [c["name"] for c in first["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert bookmark["columnDefinitions"] is None
    assert_json(
        bookmark,
        {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "15"},
            "columnDefinitions": None,
            "rows": [
                {
                    "cells": ["", 0, "<unknown>"],
                    "object": partial({"resourceVersion": "15", "creationTimestamp": None}),
                }
            ],
        },
    )
    assert later["columnDefinitions"] is None
    assert later["metadata"] == {"resourceVersion": "16"}
    assert later["rows"][0]["cells"] == ["empty", 0, "3d"]


# --- PartialObjectMetadata ----------------------------------------------------------------------


@pytest.mark.parametrize("api_version", ["meta.k8s.io/v1", "meta.k8s.io/v1beta1"])
def test_partial_object_metadata(api_version: str) -> None:
    obj = {
        "kind": "Secret",  # the object's own kind and apiVersion are not carried over
        "apiVersion": "v1",
        "metadata": {
            "labels": {"a": "b"},
            "name": "token",
            "namespace": "dev",
            "resourceVersion": "stale",
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            "creationTimestamp": NOW,
        },
        "data": {"k": "dg=="},
    }
    assert_json(
        partial_object_metadata(obj, "42", api_version=api_version),
        {
            "kind": "PartialObjectMetadata",
            "apiVersion": api_version,
            "metadata": {
                "name": "token",
                "namespace": "dev",
                "resourceVersion": "42",
                "creationTimestamp": NOW,
                "labels": {"a": "b"},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            },
        },
    )


@pytest.mark.parametrize("api_version", ["meta.k8s.io/v1", "meta.k8s.io/v1beta1"])
def test_partial_object_metadata_list(api_version: str) -> None:
    got = partial_object_metadata_list(
        [(CM_FULL, "11"), (CM_EMPTY, "12")],
        list_meta={"resourceVersion": "20", "continue": "", "remainingItemCount": None},
        api_version=api_version,
    )
    assert_json(
        got,
        {
            "kind": "PartialObjectMetadataList",
            "apiVersion": api_version,
            "metadata": {"resourceVersion": "20"},
            "items": [
                partial(full_config_map("11")["metadata"], api_version),
                partial(
                    {
                        "name": "empty",
                        "namespace": "dev",
                        "uid": "u-2",
                        "resourceVersion": "12",
                        "creationTimestamp": "2024-04-28T12:00:00Z",
                    },
                    api_version,
                ),
            ],
        },
    )


def test_an_empty_partial_object_metadata_list_has_null_items() -> None:
    assert_json(
        partial_object_metadata_list([], list_meta={"resourceVersion": "20"}),
        {
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "20"},
            "items": None,
        },
    )


@pytest.mark.parametrize(
    ("resource", "list_requested", "message"),
    [
        (
            CONFIG_MAPS,
            False,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)",
        ),
        (
            SECRETS,
            True,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Secret)",
        ),
        (
            WIDGETS,
            False,
            "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)",
        ),
        (
            WIDGETS,
            True,
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            "(*unstructured.Unstructured)",
        ),
    ],
)
def test_partial_shape_errors(resource: Resource, list_requested: bool, message: str) -> None:
    status = partial_shape_error(resource, list_requested=list_requested).status
    assert (status.code, status.reason, status.message) == (406, "NotAcceptable", message)
    assert not status.HasField("details")


# --- where columns come from --------------------------------------------------------------------


def test_columns_come_from_the_resource_then_the_builtin_printers_then_the_default() -> None:
    own = (Column("Size", "integer", "How big.", lambda obj: obj["spec"]["size"]),)
    sized = Resource(
        group="example.com",
        version="v1",
        resource="widgets",
        kind="Widget",
        singular="widget",
        namespaced=True,
        schema=JsonSchema(),
        strategy=Strategy(columns=own),
    )
    assert columns_for(sized) is own
    assert columns_for(WIDGETS) is DEFAULT_COLUMNS
    assert [c.name for c in columns_for(SECRETS)] == ["Name", "Type", "Data", "Age"]
    got = table(sized, [(WIDGET, "6")], list_meta={}, include_object="None", now_ns=NOW_NS)
    assert got["columnDefinitions"] == [
        {"name": "Size", "type": "integer", "format": "", "description": "How big.", "priority": 0}
    ]
    assert got["rows"] == [{"cells": [3], "object": None}]
