"""events.k8s.io/v1 Event: its registry entry, field selectors and kube-apiserver's validation of events
written through this API (pkg/apis/core/validation/events.go, the strict events.k8s.io/v1 rules).

As upstream, events.k8s.io Events live in the core/v1 Event storage, in core form, converted field by field
(pkg/apis/events/v1/conversion.go: regarding is involvedObject, note message, reportingController
reportingComponent, deprecatedSource source, ...): an Event written through either API is read, listed,
watched and selected through both. Field selectors take events.k8s.io names and select on the core form as
kube's AddFieldLabelConversionsForEvent maps them (`regarding.name` is `involvedObject.name`; `source` is the
source component, else the reporting controller). Error paths are upstream's internal (core) names where it
reports them so: involvedObject.namespace, message, ...
"""

from __future__ import annotations

from capstan.api.events.v1 import events_pb2
from server.kinds.corev1 import EVENTS as CORE_EVENTS
from server.kinds.templates import get, immutable, semantically_equal
from server.machinery import meta
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.machinery.values import text_of as _text
from server.registry.resources import Resource, Schema, StoredAs
from server.registry.strategy import Declared

LENGTH_LIMIT = 128  # reportingInstance, action and reason
NOTE_LENGTH_LIMIT = 1024
EVENT_TYPES = ("Normal", "Warning")
UNSET = "needs to be unset"


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


# events.k8s.io/v1 field -> its core/v1 name; every other field has the same name in both.
TO_CORE = {
    "regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
    "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count",
}
FROM_CORE = {core: events for events, core in TO_CORE.items()}
SCHEMA = ProtoSchema(events_pb2.Event)

# AddFieldLabelConversionsForEvent: each events.k8s.io field label and the core/v1 one it selects on.
FIELD_LABELS = {
    "reason": "reason", "reportingController": "reportingComponent", "source": "source", "type": "type",
    **{f"regarding.{f}": f"involvedObject.{f}" for f in (
        "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
}


def _renamed(obj: Obj, names: dict[str, str], schema: Schema) -> Obj:
    """obj with its top-level fields renamed, typed by the other version's schema."""
    renamed = {names.get(k, k): v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    typed, _ = schema.normalize(renamed)
    return typed


def to_core(obj: Obj) -> Obj:
    """Convert_v1_Event_To_core_Event, as the core/v1 Event stored."""
    return _renamed(obj, TO_CORE, CORE_EVENTS.schema)


def from_core(obj: Obj) -> Obj:
    """Convert_core_Event_To_v1_Event."""
    return _renamed(obj, FROM_CORE, SCHEMA)


EVENTS = Resource(
    group="events.k8s.io", version="v1", resource="events", kind="Event", singular="event", namespaced=True,
    schema=SCHEMA, short_names=("ev",), storage_group_version="v1",
    # Selection reads the stored (core) form: each label is the core/v1 getter of the field it maps to.
    field_getters={label: CORE_EVENTS.field_getters[core] for label, core in FIELD_LABELS.items()},
    stored_as=StoredAs(group=CORE_EVENTS.group, resource=CORE_EVENTS.resource, schema=CORE_EVENTS.schema,
                       to_storage=to_core, from_storage=from_core),
    strategy=Declared(  # the same storage and eventStrategy as core/v1 events
        garbage_collection="Unsupported", validation=validate_event),
)

KINDS = (EVENTS,)
