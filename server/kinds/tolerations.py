"""core/v1 Toleration matching (k8s.io/api/core/v1 Toleration.ToleratesTaint), which every part that places or
keeps Pods on Nodes asks the same way: the scheduler, the daemonset controller and node lifecycle's taint
eviction."""

from __future__ import annotations

from server.machinery.values import Obj


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """An empty effect matches every effect, an empty key (with Exists) every key; Equal compares values."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and str(toleration.get("value") or "") == str(taint.get("value") or "")
