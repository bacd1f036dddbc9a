"""DefaultTolerationSeconds admission (plugin/pkg/admission/defaulttolerationseconds): a Pod, created or
updated, that tolerates neither a not-ready nor an unreachable node (no NoExecute toleration of that taint, nor
one of every key) gets kube's default toleration of each for 300 seconds, so its node's failure evicts it after
five minutes rather than at once. On by default; `--disable-admission-plugins=DefaultTolerationSeconds` leaves
Pods as written (test-cmd's kube-apiserver runs so).
"""

from __future__ import annotations

from server.kinds.tolerations import NOT_READY, UNREACHABLE
from server.machinery.values import Obj

NAME = "DefaultTolerationSeconds"
SECONDS = 300  # --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds


def admit(pod: Obj) -> bool:
    """Add what the Pod lacks of the two default tolerations, in place; whether anything was added."""
    spec = pod.setdefault("spec", {})
    tolerations = spec.get("tolerations") or []
    added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": SECONDS}
             for key in (NOT_READY, UNREACHABLE) if not _tolerates(tolerations, key)]
    if added:
        spec["tolerations"] = [*tolerations, *added]
    return bool(added)


def _tolerates(tolerations: list[Obj], key: str) -> bool:
    return any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None) for t in tolerations)
