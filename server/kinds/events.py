"""events.k8s.io/v1 Event: its registry entry, field selectors and kube-apiserver's validation of events
written through this API (pkg/apis/core/validation/events.go, the strict events.k8s.io/v1 rules).

Upstream serves events.k8s.io Events from the core/v1 Event storage, converted field by field; here they
are stored on their own, so an Event written through one API is not seen through the other. Error paths
are upstream's internal (core) names where it reports them so: involvedObject.namespace, message, ...
"""

from __future__ import annotations

from collections.abc import Callable

from capstan.api.events.v1 import events_pb2
from server.kinds.templates import get, immutable, semantically_equal
from server.objects import meta
from server.registry import Obj, Resource
from server.schema import ProtoSchema
from server.validation import names
from server.validation.names import FieldError

LENGTH_LIMIT = 128  # reportingInstance, action and reason
NOTE_LENGTH_LIMIT = 1024
EVENT_TYPES = ("Normal", "Warning")
UNSET = "needs to be unset"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _legacy_errors(obj: Obj) -> list[FieldError]:
    """legacyValidateEvent, as an events.k8s.io/v1 request runs it."""
    errs: list[FieldError] = []
    namespace = _text(meta.meta(obj).get("namespace"))
    regarding_namespace = _text(get(obj, "regarding", "namespace"))
    mismatch = FieldError.invalid("involvedObject.namespace", regarding_namespace, "does not match event.namespace")
    if not obj.get("eventTime"):
        if (regarding_namespace and namespace != regarding_namespace) or (
                not regarding_namespace and namespace not in ("", "default")):
            errs.append(mismatch)
    else:
        if not regarding_namespace and namespace not in ("default", "kube-system"):
            errs.append(mismatch)
        controller = _text(obj.get("reportingController"))
        if not controller:
            errs.append(FieldError.required("reportingController"))
        errs.extend(FieldError.invalid("reportingController", controller, m)
                    for m in names.is_qualified_name(controller))
        for field, path in (("reportingInstance", "reportingInstance"), ("action", "action"), ("reason", "reason")):
            value = _text(obj.get(field))
            if not value:
                errs.append(FieldError.required(path))
            if len(value) > LENGTH_LIMIT:
                errs.append(FieldError.invalid(path, "", f"can have at most {LENGTH_LIMIT} characters"))
        if len(_text(obj.get("note"))) > NOTE_LENGTH_LIMIT:
            errs.append(FieldError.invalid("message", "", f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    errs.extend(FieldError.invalid("namespace", namespace, m) for m in names.is_dns1123_subdomain(namespace))
    return errs


def _series_errors(obj: Obj) -> list[FieldError]:
    """validateV1EventSeries."""
    series = obj.get("series")
    if not isinstance(series, dict):
        return []
    errs: list[FieldError] = []
    if not isinstance(series.get("count"), int) or series["count"] < 2:
        errs.append(FieldError.invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(FieldError.required("series.lastObservedTime"))
    return errs


def _create_errors(obj: Obj) -> list[FieldError]:
    """ValidateEventCreate's strict part: eventTime and type required, the deprecated fields unset."""
    errs = _series_errors(obj)
    if not obj.get("eventTime"):
        errs.append(FieldError.required("eventTime"))
    if obj.get("type") not in EVENT_TYPES:
        errs.append(FieldError.invalid("type", "", f"has invalid value: {_text(obj.get('type'))}"))
    for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        if obj.get(field):
            errs.append(FieldError.invalid(field, "", UNSET))
    if obj.get("deprecatedCount"):
        errs.append(FieldError.invalid("deprecatedCount", "", UNSET))
    source = obj.get("deprecatedSource") or {}
    if source.get("component") or source.get("host"):
        errs.append(FieldError.invalid("deprecatedSource", "", UNSET))
    return errs


# events.k8s.io field -> the internal field an update may not change, in ValidateEventUpdate's order.
IMMUTABLE = (
    ("regarding", "involvedObject"), ("reason", "reason"), ("note", "message"), ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"), ("reason", "reason"), ("type", "type"), ("eventTime", "eventTime"),
    ("action", "action"), ("related", "related"), ("reportingController", "reportingController"),
    ("reportingInstance", "reportingInstance"),
)


def validate_event(obj: Obj, old: Obj | None) -> list[FieldError]:
    errs = _legacy_errors(obj)
    if old is None:
        return errs + _create_errors(obj)
    if not semantically_equal(obj.get("series"), old.get("series")):
        errs += _series_errors(obj)
    for field, path in IMMUTABLE:
        errs += immutable(obj.get(field), old.get(field), path)
    return errs


def _regarding(field: str) -> Callable[[Obj], str]:
    return lambda obj: _text(get(obj, "regarding", field))


EVENTS = Resource(
    group="events.k8s.io", version="v1", resource="events", kind="Event", singular="event", namespaced=True,
    schema=ProtoSchema(events_pb2.Event), short_names=("ev",),
    # The fields kube-apiserver converts for events.k8s.io/v1 (AddFieldLabelConversionsForEvent).
    field_getters={
        "reason": lambda obj: _text(obj.get("reason")),
        "regarding.kind": _regarding("kind"),
        "regarding.namespace": _regarding("namespace"),
        "regarding.name": _regarding("name"),
        "regarding.uid": _regarding("uid"),
        "regarding.apiVersion": _regarding("apiVersion"),
        "regarding.resourceVersion": _regarding("resourceVersion"),
        "regarding.fieldPath": _regarding("fieldPath"),
        "reportingController": lambda obj: _text(obj.get("reportingController")),
        "type": lambda obj: _text(obj.get("type")),
    },
    validate=validate_event,
)

KINDS = (EVENTS,)
