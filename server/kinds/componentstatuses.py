"""core/v1 componentstatuses (cs): the health of the control plane's components, computed on every read.

kube-apiserver 1.28 answers get and list by probing each component (pkg/registry/core/componentstatus):
`scheduler` and `controller-manager` through their /healthz, `etcd-0` through its storage health check, each as
one `Healthy` condition: True with the message `ok`, or False saying why: a /healthz probe's failure in its
message (kube's HTTP prober returns a refused connection as a failure's data), the storage check's in its error.
The kind is deprecated (every answer carries `v1 ComponentStatus is deprecated in v1.19+`); a name it does not probe is
a plain error (500, no reason: `Component not found: x`). Capstan probes nothing over the network:
- etcd-0 is the store, read as the core's `etcd` health check reads it (server/objects/health.py's store_check);
- controller-manager: Capstan's controllers run in the core elected through the `capstan-controllers` Lease in
  kube-system (server/runtime/election.py), so it is Healthy while a holder's lease is current, and otherwise
  answers the error kube shows for a controller-manager that is not running;
- scheduler: Capstan's (the `scheduler` controller, when run) holds no Lease or health endpoint of its own, so
  this always answers the error kube shows for a scheduler that is not running.
"""

from __future__ import annotations

import datetime
import time

from capstan.api.core.v1 import core_pb2 as core_v1
from server.machinery import errors
from server.machinery.schema import ProtoSchema
from server.machinery.values import Obj
from server.objects import health, render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from server.runtime.election import LEASE_NAME, LEASE_NAMESPACE

SCHEDULER_DOWN = ('Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259: connect: connection refused')
CONTROLLER_MANAGER_DOWN = ('Get "https://127.0.0.1:10257/healthz": '
                           'dial tcp 127.0.0.1:10257: connect: connection refused')
DEPRECATION = "v1 ComponentStatus is deprecated in v1.19+"


def _status(name: str, failure: str | None, *, probed: bool) -> Obj:
    """A component's one Healthy condition. A failed /healthz probe (`probed`) says why in its message, as kube's
    HTTP prober reports a refused connection as a failure's data; a failed storage check in its error."""
    condition: Obj = {"type": "Healthy", "status": "True", "message": "ok"} if failure is None else {
        "type": "Healthy", "status": "False", "message" if probed else "error": failure}
    return {"metadata": {"name": name}, "conditions": [condition]}


async def _controllers_lead(ctx: Context) -> bool:
    """Whether some core holds the controllers' Lease and renewed it within its duration."""
    leases = ctx.registry.get("coordination.k8s.io", "v1", "leases")
    if leases is None:
        return False
    got = await store_call(ctx.store.get(leases.key(LEASE_NAMESPACE, LEASE_NAME)))
    if got.kv is None:
        return False
    spec = render.load(got.kv.value).get("spec") or {}
    try:
        renewed = datetime.datetime.fromisoformat(str(spec.get("renewTime") or "").replace("Z", "+00:00"))
    except ValueError:
        return False
    if not spec.get("holderIdentity"):
        return False
    return time.time() < renewed.timestamp() + float(spec.get("leaseDurationSeconds") or 0)


async def statuses(ctx: Context) -> list[Obj]:
    store = await health.store_check(ctx.store)()
    manager = None if await _controllers_lead(ctx) else CONTROLLER_MANAGER_DOWN
    return [_status("scheduler", SCHEDULER_DOWN, probed=True), _status("controller-manager", manager, probed=True),
            _status("etcd-0", store, probed=False)]


def not_found(name: str) -> errors.ApiError:
    """REST.Get's answer for a component it does not probe: a plain error, as ErrorToAPIStatus words it."""
    return errors.ApiError(errors.status(500, "", f"Component not found: {name}", with_details=False))


COMPONENT_STATUSES = Resource(
    group="", version="v1", resource="componentstatuses", kind="ComponentStatus", singular="componentstatus",
    namespaced=False, schema=ProtoSchema(core_v1.ComponentStatus),
    verbs=("get", "list"),
    short_names=("cs",),
    computed=statuses,
    computed_missing=not_found,
    deprecation_warning=DEPRECATION,
)
