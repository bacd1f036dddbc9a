"""Server-side printing: kinds as meta.k8s.io Tables, and objects reduced to PartialObjectMetadata.

The core renders these (so gRPC clients get them as REST clients do); the gateway only
serializes. Modules: duration (ages, as HumanDuration words them), columns (each kind's
columns as data), table (the Table and PartialObjectMetadata(List) documents).
"""

from __future__ import annotations

from server.registry.printing.columns import DEFAULT_COLUMNS, definition
from server.registry.printing.duration import Since, human_duration, since
from server.registry.printing.printers import BUILTIN, columns_for
from server.registry.printing.table import (
    META_V1,
    META_V1BETA1,
    TableStream,
    object_table,
    partial_object_metadata,
    partial_object_metadata_list,
    partial_shape_error,
    table,
    table_options,
)

__all__ = [
    "BUILTIN",
    "DEFAULT_COLUMNS",
    "META_V1",
    "META_V1BETA1",
    "Since",
    "TableStream",
    "columns_for",
    "definition",
    "human_duration",
    "object_table",
    "partial_object_metadata",
    "partial_object_metadata_list",
    "partial_shape_error",
    "since",
    "table",
    "table_options",
]
