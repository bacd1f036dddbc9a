"""`kubectl apply --server-side` after client-side apply: kubectl's last-applied-configuration annotation.

kube-apiserver eases the move from client-side to server-side apply for the manager "kubectl":
a conflict on fields that the annotation's configuration holds at their live values is not a
conflict — those fields were kubectl's own (its lastAppliedManager); and after such an apply the
annotation, if the object has one, is rewritten to the applied configuration (its
lastAppliedUpdater), so that a later client-side apply compares against what was applied last.
"""

from __future__ import annotations

import orjson

from server.machinery import meta
from server.machinery.fields import typed
from server.machinery.fields.fieldset import FieldSet
from server.machinery.fields.shapes import Shape
from server.machinery.patch.values import copy_json
from server.machinery.values import Obj

ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL = "kubectl"


def allowed_conflicts(live: Obj, shape: Shape) -> FieldSet:
    """The fields the annotation's configuration sets to the values the live object still has."""
    text = (meta.meta(live).get("annotations") or {}).get(ANNOTATION)
    if not isinstance(text, str) or not text:
        return FieldSet()
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return FieldSet()
    if not isinstance(last, dict):
        return FieldSet()
    return typed.to_field_set(last, shape).difference(typed.compare(last, live, shape).modified)


def record(new: Obj, config: Obj) -> None:
    """If new carries the annotation, it becomes the applied configuration (without the annotation),
    encoded as apimachinery encodes unstructured objects: sorted keys, then a newline."""
    annotations = meta.meta(new).get("annotations")
    if not isinstance(annotations, dict) or ANNOTATION not in annotations:
        return
    applied = copy_json(config)
    config_meta = applied.get("metadata")
    if isinstance(config_meta, dict) and isinstance(config_meta.get("annotations"), dict):
        config_meta["annotations"].pop(ANNOTATION, None)
        if not config_meta["annotations"]:
            del config_meta["annotations"]
    annotations[ANNOTATION] = orjson.dumps(applied, option=orjson.OPT_SORT_KEYS).decode() + "\n"
