"""Capstan's storage layer: keys, bytes and revisions, nothing about Kubernetes.

Callers use the `Store` protocol; `open_store` picks the LMDB backend.
"""

from storage.errors import (
    BackendFailure,
    BackendUnavailable,
    Compacted,
    DiskFailure,
    InvalidArgument,
    QuotaExceeded,
    RevisionTooLarge,
    StorageError,
    StoreClosed,
    WatcherTooSlow,
)
from storage.interface import MAX_KEY_SIZE, Store, Watch
from storage.options import StoreOptions
from storage.types import (
    CountResult,
    Event,
    EventType,
    GetResult,
    KeyValue,
    ListResult,
    Outcome,
    WriteResult,
)

__all__ = [
    "MAX_KEY_SIZE",
    "BackendFailure",
    "BackendUnavailable",
    "Compacted",
    "CountResult",
    "DiskFailure",
    "Event",
    "EventType",
    "GetResult",
    "InvalidArgument",
    "KeyValue",
    "ListResult",
    "Outcome",
    "QuotaExceeded",
    "RevisionTooLarge",
    "StorageError",
    "Store",
    "StoreClosed",
    "StoreOptions",
    "Watch",
    "WatcherTooSlow",
    "WriteResult",
]
