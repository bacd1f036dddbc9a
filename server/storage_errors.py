"""The one place storage errors become Kubernetes errors (the core's boundary with storage/).

Compacted -> 410 Expired, RevisionTooLarge -> 504 with Retry-After (as the spec
asks), StoreClosed -> 503, QuotaExceeded -> 507, DiskFailure -> 503 with Retry-After,
anything else from the store -> 500.

The two storage-full answers are deliberate departures from kube-apiserver, which passes etcd's
"etcdserver: mvcc: database space exceeded" (and a failed disk) on as a 500 InternalError:
- QuotaExceeded is 507 "InsufficientStorage" (RFC 4918: the server cannot store what the request
  needs). It stays a 5xx, the server's condition and not the client's fault, as kube's 500 is, so
  clients that count server errors count it; it is not 413 (the request is not too large) nor 429
  (client-go would retry a write that cannot succeed until an operator frees space), and it carries
  no Retry-After for the same reason. kube has no reason for it, so the reason names the HTTP
  status, and the message keeps etcd's words, which is what kube users search for, plus the quota.
  Over gRPC it is RESOURCE_EXHAUSTED, the code etcd answers it with.
- DiskFailure is 503 "ServiceUnavailable" with Retry-After: nothing was written, the store keeps
  serving reads, and the same write succeeds once the disk takes writes again, so a retry is right
  (client-go retries a 503 that carries Retry-After).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from server import errors
from storage import (
    Compacted,
    DiskFailure,
    QuotaExceeded,
    RevisionTooLarge,
    StorageError,
    StoreClosed,
    WatcherTooSlow,
)

T = TypeVar("T")

DISK_RETRY_AFTER = 5  # seconds a client waits before retrying a write the disk refused


def translate(err: StorageError) -> errors.ApiError:
    if isinstance(err, Compacted):
        return errors.expired(f"too old resource version: {err.requested} ({err.compact_revision})")
    if isinstance(err, RevisionTooLarge):
        return errors.too_large_resource_version(err.requested, err.current)
    if isinstance(err, StoreClosed):
        return errors.service_unavailable("the server is shutting down")
    if isinstance(err, WatcherTooSlow):
        return errors.gone(f"watch closed: {err}")
    if isinstance(err, QuotaExceeded):
        return errors.ApiError(errors.status(
            507, "InsufficientStorage",
            f"etcdserver: mvcc: database space exceeded: {err.size} bytes in use, the quota is {err.quota}"
            " (--quota-backend-bytes); delete objects to free space", with_details=False))
    if isinstance(err, DiskFailure):
        return errors.ApiError(errors.status(
            503, "ServiceUnavailable", f"storage unavailable: {err}", retry_after=DISK_RETRY_AFTER))
    return errors.internal(str(err))  # BackendFailure, or InvalidArgument: a bug of ours, not the client's


async def store_call(awaitable: Awaitable[T]) -> T:
    """Await a store call, translating its typed errors."""
    try:
        return await awaitable
    except StorageError as err:
        raise translate(err) from None
