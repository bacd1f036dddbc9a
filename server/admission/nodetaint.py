"""kube-apiserver 1.28's TaintNodesByCondition admission plugin (plugin/pkg/admission/nodetaint), on by default: a
Node is created with the NoSchedule taint `node.kubernetes.io/not-ready`, so that no Pod is scheduled to it
before its kubelet reports Ready; the node lifecycle controller removes the taint once its conditions say so.

Contracts, as kube's: only a create of a Node itself (no subresource); a taint of that key and effect already
there (whatever its value) is left as it is; the taint added has no value and no timeAdded. What the plugin adds
is not in the object's managedFields, as admission runs after the field manager.
"""

from __future__ import annotations

from server.admission import Plugin
from server.kinds.tolerations import NOT_READY
from server.machinery.values import Obj
from server.objects.admitting import Attributes
from server.objects.context import Context

NAME = "TaintNodesByCondition"
_NODES = frozenset({("", "nodes")})


def with_not_ready_taint(node: Obj) -> bool:
    """Add the not-ready NoSchedule taint unless the node has it (addNotReadyTaint); whether it was added."""
    spec = node.get("spec")
    if not isinstance(spec, dict):
        spec = node["spec"] = {}
    taints = spec.get("taints") or []
    if any(isinstance(t, dict) and t.get("key") == NOT_READY and t.get("effect") == "NoSchedule" for t in taints):
        return False
    spec["taints"] = [*taints, {"key": NOT_READY, "effect": "NoSchedule"}]
    return True


async def admit(ctx: Context, attrs: Attributes) -> None:
    if attrs.subresource or attrs.kind is not None or attrs.obj is None:
        return
    with_not_ready_taint(attrs.obj)


def plugins(on: frozenset[str]) -> list[Plugin]:
    """The plugin, where `on` names it."""
    return [Plugin(NAME, frozenset(("CREATE",)), admit, resources=_NODES)] if NAME in on else []
