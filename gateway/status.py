"""Every non-2xx answer is a Kubernetes Status; this module renders them.

The core's Status arrives as a meta/v1 Status message; HTTP clients get it as
JSON (or YAML, or the protobuf envelope) with kube-apiserver's member order, and
with `Retry-After` when the Status asks for a retry.
"""

from __future__ import annotations

from typing import Any

from capstan.api.meta.v1 import meta_pb2


def status_dict(status: meta_pb2.Status) -> dict[str, Any]:
    """The Status as kube-apiserver prints it: kind, apiVersion, metadata, status, message, reason, details, code."""
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": list_meta_dict(status.metadata)}
    if status.status:
        out["status"] = status.status
    if status.message:
        out["message"] = status.message
    if status.reason:
        out["reason"] = status.reason
    if status.HasField("details"):
        out["details"] = _details(status.details)
    if status.code:
        out["code"] = status.code
    return out


def list_meta_dict(meta: meta_pb2.ListMeta) -> dict[str, Any]:
    """ListMeta as JSON, empty members omitted."""
    out: dict[str, Any] = {}
    if meta.resourceVersion:
        out["resourceVersion"] = meta.resourceVersion
    token = getattr(meta, "continue")
    if token:
        out["continue"] = token
    if meta.HasField("remainingItemCount"):
        out["remainingItemCount"] = meta.remainingItemCount
    return out


def _details(details: meta_pb2.StatusDetails) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in ("name", "group", "kind", "uid"):
        value = getattr(details, field)
        if value:
            out[field] = value
    if details.causes:
        out["causes"] = [
            {k: v for k, v in (("reason", c.reason), ("message", c.message), ("field", c.field)) if v}
            for c in details.causes
        ]
    if details.retryAfterSeconds:
        out["retryAfterSeconds"] = details.retryAfterSeconds
    return out


def http_code(status: meta_pb2.Status) -> int:
    return status.code or (200 if status.status == "Success" else 500)


def headers(status: meta_pb2.Status) -> dict[str, str]:
    """Retry-After where the Status asks for it (504 too large resourceVersion, 429, ...)."""
    if status.HasField("details") and status.details.retryAfterSeconds:
        return {"Retry-After": str(status.details.retryAfterSeconds)}
    return {}
