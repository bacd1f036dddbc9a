"""core/v1 Toleration matching (k8s.io/api/core/v1 Toleration.ToleratesTaint), which every part that places or
keeps Pods on Nodes asks the same way: the scheduler, the daemonset controller and node lifecycle's taint
eviction."""

from __future__ import annotations

from server.machinery.values import Obj

# The taints kube puts on Nodes itself (k8s.io/api/core/v1 well_known_taints.go): admission adds NOT_READY to a
# new Node, node lifecycle keeps them following the Node's conditions, and Pods' default and DaemonSet tolerations
# name them.
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
PID_PRESSURE = "node.kubernetes.io/pid-pressure"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


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
