"""audit.k8s.io/v1 Event fields as kube-apiserver writes them: its field order, Go's omitempty, MicroTime stamps.

Contract: every function answers plain JSON values (dicts in kube's field order); nothing here writes or decides
levels. Empty values are left out where kube's types say omitempty, and kept where they are structs
(`user` is `{}` for a request that proved nobody, `responseStatus.metadata` is always `{}`).
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from capstan.api.meta.v1 import meta_pb2
from server.auth.attributes import Attributes
from server.machinery.user import UserInfo

Json = dict[str, Any]


_second: list[tuple[int, str]] = [(-1, "")]  # the last whole second formatted, and its text


def micro_time(seconds: float) -> str:
    """RFC 3339 in UTC with six fractional digits, as metav1.MicroTime marshals. The date and time of day are
    formatted once per second (every request of that second shares them); the microseconds are the float's, as
    datetime.fromtimestamp rounds them (half to even)."""
    fraction, integral = math.modf(seconds)
    whole, micros = int(integral), round(fraction * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    elif micros < 0:
        whole, micros = whole - 1, micros + 1_000_000
    second, text = _second[0]
    if whole != second:
        text = datetime.datetime.fromtimestamp(whole, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second[0] = (whole, text)
    return f"{text}.{micros:06d}Z"


def user_info(user: UserInfo | None) -> Json:
    """authentication/v1 UserInfo: username, uid, groups, extra, each left out when empty."""
    return {} if user is None else user.to_json()


def object_ref(attributes: Attributes) -> Json | None:
    """The request's ObjectReference (resource requests only), kube's field order."""
    if not attributes.resource_request:
        return None
    fields = (("resource", attributes.resource), ("namespace", attributes.namespace), ("name", attributes.name),
              ("apiGroup", attributes.api_group), ("apiVersion", attributes.api_version),
              ("subresource", attributes.subresource))
    return {key: value for key, value in fields if value}


def complete_object_ref(ref: Json, obj: Json) -> None:
    """Fill what the request's object names and the URL did not (kube's LogRequestObject): a create's name."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return
    for key, field in (("namespace", "namespace"), ("name", "name"), ("uid", "uid"),
                       ("resourceVersion", "resourceVersion")):
        value = metadata.get(field)
        if isinstance(value, str) and value and key not in ref:
            ref[key] = value
    order = ("resource", "namespace", "name", "uid", "apiGroup", "apiVersion", "resourceVersion", "subresource")
    ordered = {key: ref[key] for key in order if key in ref}
    ref.clear()
    ref.update(ordered)


def response_status(code: int, status: meta_pb2.Status | None = None, message: str = "") -> Json:
    """The bounded copy of a Status kube's audit keeps (status, message, reason; never details), and the code."""
    out: Json = {"metadata": {}}
    if status is not None:
        for key, value in (("status", status.status), ("message", status.message), ("reason", status.reason)):
            if value:
                out[key] = value
    elif message:
        out["message"] = message
    out["code"] = code
    return out


def status_object(status: meta_pb2.Status) -> Json:
    """The whole Status as a response carries it (a failed request's responseObject at RequestResponse)."""
    out: Json = {"kind": "Status", "apiVersion": "v1", "metadata": {}}
    for key, value in (("status", status.status), ("message", status.message), ("reason", status.reason)):
        if value:
            out[key] = value
    if status.HasField("details"):
        d = status.details
        details: Json = {key: value for key, value in (("name", d.name), ("group", d.group), ("kind", d.kind),
                                                        ("uid", d.uid)) if value}
        if d.causes:
            details["causes"] = [{key: value for key, value in (("reason", c.reason), ("message", c.message),
                                                                 ("field", c.field)) if value} for c in d.causes]
        if d.retryAfterSeconds:
            details["retryAfterSeconds"] = d.retryAfterSeconds
        out["details"] = details
    out["code"] = status.code
    return out
