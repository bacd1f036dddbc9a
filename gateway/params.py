"""Query parameters -> the core's option messages, with kube-apiserver's 400s for malformed values.

Unknown parameters are ignored, as kube-apiserver ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from capstan.api.meta.v1 import meta_pb2
from gateway.client import CoreError, failure

Query = Mapping[str, Sequence[str]]  # every value of every parameter, in order


def _one(query: Query, name: str) -> str:
    values = query.get(name)
    return values[0] if values else ""


def _int(query: Query, name: str) -> int | None:
    text = _one(query, name)
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def _bool(query: Query, name: str) -> bool | None:
    text = _one(query, name)
    if text == "":
        return None
    lowered = text.lower()
    if lowered in ("1", "t", "true"):
        return True
    if lowered in ("0", "f", "false"):
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def bad_request(message: str) -> CoreError:
    return CoreError(failure(400, "BadRequest", message))


def list_options(query: Query) -> meta_pb2.ListOptions:
    options = meta_pb2.ListOptions(
        labelSelector=_one(query, "labelSelector"),
        fieldSelector=_one(query, "fieldSelector"),
        resourceVersion=_one(query, "resourceVersion"),
        resourceVersionMatch=_one(query, "resourceVersionMatch"),
    )
    setattr(options, "continue", _one(query, "continue"))
    for name in ("limit", "timeoutSeconds"):
        value = _int(query, name)
        if value is not None:
            setattr(options, name, value)
    for name in ("watch", "allowWatchBookmarks", "sendInitialEvents"):
        flag = _bool(query, name)
        if flag is not None:
            setattr(options, name, flag)
    return options


def get_options(query: Query) -> meta_pb2.GetOptions:
    return meta_pb2.GetOptions(resourceVersion=_one(query, "resourceVersion"))


def create_options(query: Query) -> meta_pb2.CreateOptions:
    return meta_pb2.CreateOptions(
        dryRun=list(query.get("dryRun", ())),
        fieldManager=_one(query, "fieldManager"),
        fieldValidation=_one(query, "fieldValidation"),
    )


def update_options(query: Query) -> meta_pb2.UpdateOptions:
    return meta_pb2.UpdateOptions(
        dryRun=list(query.get("dryRun", ())),
        fieldManager=_one(query, "fieldManager"),
        fieldValidation=_one(query, "fieldValidation"),
    )


def delete_options(query: Query, body: meta_pb2.DeleteOptions | None) -> meta_pb2.DeleteOptions:
    """The body's DeleteOptions, with query parameters filling what it leaves unset (as kube merges them)."""
    options = meta_pb2.DeleteOptions()
    if body is not None:
        options.CopyFrom(body)
    if not options.dryRun:
        options.dryRun.extend(query.get("dryRun", ()))
    grace = _int(query, "gracePeriodSeconds")
    if grace is not None and not options.HasField("gracePeriodSeconds"):
        options.gracePeriodSeconds = grace
    policy = _one(query, "propagationPolicy")
    if policy and not options.HasField("propagationPolicy"):
        options.propagationPolicy = policy
    orphan = _bool(query, "orphanDependents")
    if orphan is not None and not options.HasField("orphanDependents"):
        options.orphanDependents = orphan
    return options


def pretty(query: Query) -> bool:
    return bool(_bool(query, "pretty"))
