"""The one place storage errors become Kubernetes errors (the core's boundary with storage/).

Compacted -> 410 Expired, RevisionTooLarge -> 504 with Retry-After (as the spec
asks), StoreClosed -> 503, anything else from the store -> 500.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from server import errors
from storage import (
    Compacted,
    RevisionTooLarge,
    StorageError,
    StoreClosed,
    WatcherTooSlow,
)

T = TypeVar("T")


def translate(err: StorageError) -> errors.ApiError:
    if isinstance(err, Compacted):
        return errors.expired(f"too old resource version: {err.requested} ({err.compact_revision})")
    if isinstance(err, RevisionTooLarge):
        return errors.too_large_resource_version(err.requested, err.current)
    if isinstance(err, StoreClosed):
        return errors.service_unavailable("the server is shutting down")
    if isinstance(err, WatcherTooSlow):
        return errors.gone(f"watch closed: {err}")
    return errors.internal(str(err))  # BackendFailure, or InvalidArgument: a bug of ours, not the client's


async def store_call(awaitable: Awaitable[T]) -> T:
    """Await a store call, translating its typed errors."""
    try:
        return await awaitable
    except StorageError as err:
        raise translate(err) from None
