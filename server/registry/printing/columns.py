"""Each kind's Table columns, as data: kube-apiserver's printers for the built-in kinds, and its default.

The built-in printers are kubernetes pkg/printers/internalversion/printers.go (AddHandlers
and printNamespace, printConfigMap, printSecret); a kind without one gets the default table
convertor of k8s.io/apiserver pkg/registry/rest/table.go: Name and Created At. Descriptions
are the OpenAPI (SwaggerDoc) text of the field each column shows, which kube sends verbatim.

A cell is a pure function of the object; Age cells return `Since` (server/registry/printing/duration.py),
worded when the table is built. Cells keep Go's types: kube prints the Data counts as int64
though the column's type says "string".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.machinery.codec import gotime
from server.machinery.values import Obj
from server.machinery.values import text_of as _str
from server.registry.printing.duration import ZERO_TIME_SECONDS, Since
from server.registry.strategy import Column

# metav1.ObjectMeta{}.SwaggerDoc()["name"] and ["creationTimestamp"].
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
# apiv1.ConfigMap{}.SwaggerDoc()["data"], apiv1.Secret{}.SwaggerDoc()["type"] and ["data"].
CONFIG_MAP_DATA_DESCRIPTION = (
    "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. "
    "Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not "
    "overlap with the keys in the BinaryData field, this is enforced during validation process."
)
SECRET_TYPE_DESCRIPTION = (
    "Used to facilitate programmatic handling of secret data. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
)
SECRET_DATA_DESCRIPTION = (
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The "
    "serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly "
    "non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"
)
NAMESPACE_STATUS_DESCRIPTION = "The status of the namespace"


def _meta(obj: Obj) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int:
    return len(value) if isinstance(value, dict) else 0


def name(obj: Obj) -> str:
    return _str(_meta(obj).get("name"))


def age(obj: Obj) -> Since:
    return Since(_meta(obj).get("creationTimestamp"))


def created_at(obj: Obj) -> str:
    """m.GetCreationTimestamp().Time.UTC().Format(time.RFC3339): an unset time is Go's zero time."""
    timestamp = _meta(obj).get("creationTimestamp")
    if not isinstance(timestamp, str) or not timestamp:
        return gotime.format_seconds(ZERO_TIME_SECONDS)
    try:
        seconds, _ = gotime.parse(timestamp, gotime.RFC3339)
    except gotime.TimeError:
        return timestamp  # not reachable for stored objects, whose times were parsed on write
    return gotime.format_seconds(seconds)


def namespace_status(obj: Obj) -> str:
    status = obj.get("status")
    return _str(status.get("phase")) if isinstance(status, dict) else ""


def config_map_data(obj: Obj) -> int:
    return _count(obj.get("data")) + _count(obj.get("binaryData"))


def secret_type(obj: Obj) -> str:
    return _str(obj.get("type"))


def secret_data(obj: Obj) -> int:
    return _count(obj.get("data"))


NAME = Column("Name", "string", NAME_DESCRIPTION, name, format="name")
AGE = Column("Age", "string", CREATION_TIMESTAMP_DESCRIPTION, age)

NAMESPACE_COLUMNS = (NAME, Column("Status", "string", NAMESPACE_STATUS_DESCRIPTION, namespace_status), AGE)
CONFIG_MAP_COLUMNS = (NAME, Column("Data", "string", CONFIG_MAP_DATA_DESCRIPTION, config_map_data), AGE)
SECRET_COLUMNS = (
    NAME,
    Column("Type", "string", SECRET_TYPE_DESCRIPTION, secret_type),
    Column("Data", "string", SECRET_DATA_DESCRIPTION, secret_data),
    AGE,
)
# The default table convertor's columns: no Age, but the creation time itself, as a "date".
DEFAULT_COLUMNS = (NAME, Column("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION, created_at))

# Built-in printers by (group, resource): kube registers them by Go type, for every version.
CONFIG: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("", "namespaces"): NAMESPACE_COLUMNS,
    ("", "configmaps"): CONFIG_MAP_COLUMNS,
    ("", "secrets"): SECRET_COLUMNS,
}


def definition(column: Column) -> dict[str, object]:
    """The column as a meta.k8s.io TableColumnDefinition, every member present, in Go's order."""
    return {
        "name": column.name,
        "type": column.type,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    }
