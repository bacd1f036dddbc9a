"""Where a watch is, so that it can be reopened on another core after its core died (gateway/transport/pool.py),
and the resourceVersion an object or a patch carries, read from its encoded bytes.

A watch's position is the resourceVersion of the last event forwarded to the watcher, BOOKMARKs included:
reopened with resourceVersion=<that>, the same selectors and options and what is left of its timeout, the
new core sends exactly the events after it, so the watcher sees no gap and no duplicate (one global revision,
the same on every core). The event's bytes are decoded only when the watch is reopened, never per event.

The exception is a watch still sending its initial state (resourceVersion unset or "0", or
sendInitialEvents=true): those ADDED events come in key order, not revision order, so the last one is no
position. The initial state is over at the first BOOKMARK (the initial-events-end one, or a periodic one) or
MODIFIED or DELETED event; a core dying before that, once some of it was forwarded, ends the watch with
410 Expired, kube's answer to a watcher whose position cannot be served, on which clients list again.
Before anything was forwarded the watch is simply opened again as asked.
"""

from __future__ import annotations

from typing import Any

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.client import CoreError, failure

_PAST_INITIAL = frozenset({"BOOKMARK", "MODIFIED", "DELETED"})
_RESOURCE_VERSION_PATH = "/metadata/resourceVersion"


def resource_version(raw: core_pb2.RawObject) -> str:
    """metadata.resourceVersion of a JSON object or of a kind's protobuf message (metadata is field 1 of
    every kind, as in Kubernetes); "" when absent or unreadable, and for YAML (not inspected)."""
    try:
        if raw.encoding == core_pb2.ENCODING_PROTOBUF:
            return str(meta_pb2.PartialObjectMetadata.FromString(raw.data).metadata.resourceVersion)
        if raw.encoding in (core_pb2.ENCODING_JSON, core_pb2.ENCODING_UNSPECIFIED):
            metadata = _field(orjson.loads(raw.data), "metadata")
            version = _field(metadata, "resourceVersion")
            return version if isinstance(version, str) else ""
    except (orjson.JSONDecodeError, ValueError):
        return ""
    return ""


def json_patch_sets_resource_version(patch: bytes) -> bool:
    """Whether a JSON patch (RFC 6902) tests, adds or replaces metadata.resourceVersion with a value."""
    try:
        operations = orjson.loads(patch)
    except orjson.JSONDecodeError:
        return False
    return isinstance(operations, list) and any(
        isinstance(op, dict) and op.get("op") in ("test", "add", "replace")
        and op.get("path") == _RESOURCE_VERSION_PATH and isinstance(op.get("value"), str) and bool(op["value"])
        for op in operations)


def _field(doc: Any, name: str) -> Any:
    return doc.get(name) if isinstance(doc, dict) else None


class Position:
    """One watch's position, updated with every batch forwarded to the watcher (mutable, per watch)."""

    def __init__(self, request: core_pb2.WatchRequest, now: float) -> None:
        options = request.options
        self._request = request
        self._deadline = now + options.timeoutSeconds if options.timeoutSeconds > 0 else None
        initial = (options.sendInitialEvents if options.HasField("sendInitialEvents")
                   else options.resourceVersion in ("", "0"))
        self._known = not initial  # the last event forwarded is a position
        self._last: core_pb2.WatchEvent | None = None

    def forwarded(self, batch: core_pb2.WatchResponse) -> None:
        if not batch.events:
            return
        if not self._known:
            self._known = any(event.type in _PAST_INITIAL for event in batch.events)
        self._last = batch.events[-1]

    def reopen(self, now: float) -> core_pb2.WatchRequest | None:
        """The request that continues the watch on another core; None when its timeout has passed (it ends as
        it would have); CoreError 410 when its position is lost (see the module docstring)."""
        remaining = None if self._deadline is None else int(self._deadline - now + 0.999)
        if remaining is not None and remaining <= 0:
            return None
        request = core_pb2.WatchRequest()
        request.CopyFrom(self._request)
        if remaining is not None:
            request.options.timeoutSeconds = remaining
        if self._last is None:
            return request
        version = resource_version(self._last.object) if self._known else ""
        if not version:
            raise CoreError(failure(410, "Expired", "the watch's core went away while it sent the initial state:"
                                                    " list again, then watch from the list's resourceVersion"))
        request.options.resourceVersion = version
        request.options.ClearField("sendInitialEvents")
        request.options.ClearField("resourceVersionMatch")
        return request
