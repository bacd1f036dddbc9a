"""The Gadget operator's webhooks, as plain functions of the review's request (what a Python operator would serve
behind its own HTTPS endpoint): a validating one (a Gadget's size must be positive), a mutating one (every Gadget
gets the `capstan.example.com/owner` label) and the conversion between v1 (`spec.color`) and v2 (`spec.paint`).
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]
GROUP = "capstan.example.com"
OWNER_LABEL = f"{GROUP}/owner"


def validate(request: Obj) -> Obj:
    size = ((request.get("object") or {}).get("spec") or {}).get("size", 1)
    if size > 0:
        return {"allowed": True}
    return {"allowed": False, "status": {"code": 422, "reason": "Invalid",
                                         "message": f"spec.size must be positive, not {size}"}}


def mutate(request: Obj) -> Obj:
    labels = ((request.get("object") or {}).get("metadata") or {}).get("labels")
    if labels is None:
        patch = [{"op": "add", "path": "/metadata/labels", "value": {OWNER_LABEL: "gadget-operator"}}]
    elif OWNER_LABEL not in labels:
        patch = [{"op": "add", "path": "/metadata/labels/" + OWNER_LABEL.replace("/", "~1"),
                  "value": "gadget-operator"}]
    else:
        return {"allowed": True}
    return {"allowed": True, "patch": patch}


def convert(request: Obj) -> Obj:
    desired = request["desiredAPIVersion"]
    converted = []
    for obj in request["objects"]:
        obj = copy.deepcopy(obj)
        spec = obj.setdefault("spec", {})
        if desired == f"{GROUP}/v2" and "color" in spec:
            spec["paint"] = spec.pop("color")
        elif desired == f"{GROUP}/v1" and "paint" in spec:
            spec["color"] = spec.pop("paint")
        obj["apiVersion"] = desired
        converted.append(obj)
    return {"convertedObjects": converted, "result": {"status": "Success"}}
