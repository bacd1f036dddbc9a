"""The one place storage errors become Kubernetes errors (the core's boundary with storage/).

Compacted -> 410 Expired, RevisionTooLarge -> 504 with Retry-After (as the spec
asks), StoreClosed -> 503, QuotaExceeded -> 507, DiskFailure -> 503 with Retry-After,
BackendUnavailable -> 504 Timeout with Retry-After, any other BackendFailure -> 500 with
Retry-After, anything else from the store (InvalidArgument: a bug of ours) -> 500.

An unreachable etcd: kube-apiserver's etcd client keeps retrying until the request's context
expires, and the request then ends as kube's 504 "Timeout: request did not complete within requested
timeout - context deadline exceeded" (endpoints/handlers/finisher.go; an error etcd itself returns,
such as "etcdserver: request timed out", is a 500 with its text). Capstan answers the same Status as
soon as a call fails or passes its bound (EtcdConfig.call_timeout), well inside the request's
deadline, and adds Retry-After (kube's carries retryAfterSeconds 0): the outcome of a write is then
unknown, as it is on kube, and a retry either applies it or meets it (409 AlreadyExists, or a
Conflict on a resourceVersion), which client-go's retry on a 5xx with Retry-After handles. Every
BackendFailure carries Retry-After, since the backend failing is the server's state, not the request's.

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

from server.machinery import errors
from storage import (
    BackendFailure,
    BackendUnavailable,
    Compacted,
    DiskFailure,
    Outcome,
    QuotaExceeded,
    RevisionTooLarge,
    StorageError,
    StoreClosed,
    WatcherTooSlow,
)
from storage import Store as Store  # the store's interface, for the modules that keep records through the helpers

T = TypeVar("T")

DISK_RETRY_AFTER = 5  # seconds a client waits before retrying a write the disk refused
BACKEND_RETRY_AFTER = 1  # seconds before retrying a call the backend did not answer (an etcd election is ~1 s)
DEADLINE_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"


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
    if isinstance(err, BackendUnavailable):
        return errors.ApiError(errors.status(504, "Timeout", DEADLINE_MESSAGE, retry_after=BACKEND_RETRY_AFTER))
    if isinstance(err, BackendFailure):
        message = str(err)
        return errors.ApiError(errors.status(500, "InternalError", f"Internal error occurred: {message}",
                                             causes=[errors.Cause("", message)], retry_after=BACKEND_RETRY_AFTER))
    return errors.internal(str(err))  # InvalidArgument: a bug of ours, not the client's


async def store_call(awaitable: Awaitable[T]) -> T:
    """Await a store call, translating its typed errors."""
    try:
        return await awaitable
    except StorageError as err:
        raise translate(err) from None


async def swap(store: Store, key: bytes, value: bytes, expected_mod_revision: int) -> bool:
    """Write `value` at `key` if the key is still at `expected_mod_revision` (0: if it does not exist); False when
    another write came first. A record kept by compare-and-swap (service IP and port reservations) writes so."""
    if expected_mod_revision:
        result = await store_call(store.update(key, value, expected_mod_revision=expected_mod_revision))
    else:
        result = await store_call(store.create(key, value))
    return result.outcome is Outcome.OK


async def create_unless_present(store: Store, key: bytes, value: bytes) -> str:
    """Create `key` unless it exists (content-addressed records: the same key holds the same value); "" when the
    key holds a value afterwards, else the store's outcome. The store's errors pass through untranslated."""
    result = await store.create(key, value)
    return "" if result.outcome in (Outcome.OK, Outcome.EXISTS) else str(result.outcome)
