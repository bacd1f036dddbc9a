"""The one limit on a stored object's size, for every kind and both interfaces.

kube-apiserver leaves it to etcd, whose --max-request-bytes (1.5 MiB by default) refuses a larger
write; kube answers that as a 500 with etcd's words, "etcdserver: request is too large". Capstan
measures the object's JSON as it is stored (without resourceVersion) against the same 1.5 MiB
before any write, in the core, so REST and gRPC callers alike get it, and answers kube's 413
RequestEntityTooLarge Status rather than a 500 (a deliberate difference: it is the client's
request that is too large). Dry runs are measured too late to matter, as in kube: they never
reach the store. Request bodies over 3 MiB are refused earlier, by the gateway.
"""

from __future__ import annotations

from server.machinery import errors, stored

MAX_OBJECT_BYTES = 1536 * 1024  # etcd's default --max-request-bytes


def check(value: bytes) -> None:
    """Raises 413 RequestEntityTooLarge when the stored value's JSON is over MAX_OBJECT_BYTES."""
    size = len(stored.json_of(value))
    if size > MAX_OBJECT_BYTES:
        raise errors.ApiError(errors.status(
            413, "RequestEntityTooLarge",
            f"Request entity too large: etcdserver: request is too large: the object is {size} bytes, "
            f"limit is {MAX_OBJECT_BYTES}", with_details=False))
