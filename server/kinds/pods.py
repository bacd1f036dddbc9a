"""core/v1 Pod: defaults, validation, field selectors, the /binding subresource and graceful deletion.

There are no kubelets and no scheduler. A Pod is stored as written (defaulted, status Pending); binding it
(POST pods/{name}/binding, as a scheduler does) sets spec.nodeName and the PodScheduled condition. Deleting a
Pod that is bound gets the grace period kube-apiserver gives it (deletionTimestamp in the future and
deletionGracePeriodSeconds, a MODIFIED event); server/controllers/terminator.py then plays the kubelet's part
and deletes it when the period ends. An unbound Pod, or a grace period of 0, deletes at once.

Sources: kubernetes pkg/apis/core/v1/defaults.go (SetDefaults_Pod), pkg/registry/core/pod (strategy, storage:
BindingREST, CheckGracefulDelete, PodToSelectableFields), plugin/pkg/admission (priority, serviceaccount,
defaulttolerationseconds), pkg/apis/core/helper/qos (GetPodQOS).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

import orjson

from capstan.api.core.v1 import core_pb2 as core_v1
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds import ephemeral, podconnect, podspec, podwarnings, proxy
from server.kinds.eviction import evict
from server.kinds.shaped import retype
from server.machinery import errors, meta
from server.machinery.codec.quantity import parse_quantity
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.objects import body, create, options, render
from server.objects.admitting import Attributes, admit
from server.objects.context import Context
from server.objects.update import guaranteed_update
from server.registry.resources import Handlers, Resource, Subresource
from server.registry.strategy import Declared

QOS_RESOURCES = ("cpu", "memory")
POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
POD_SCHEMA = ProtoSchema(core_v1.Pod)


# --- defaults ----------------------------------------------------------------------------------------------------


def default_pod(obj: Obj) -> None:
    """SetDefaults_Pod and SetDefaults_PodSpec with everything inside (static defaults: the writer's fields)."""
    spec = obj.setdefault("spec", {})
    podspec.default_pod_spec(spec)
    for container in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])):
        _requests_from_limits(container)
    spec.setdefault("enableServiceLinks", True)
    if spec.get("hostNetwork"):
        for container in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])):
            for port in container.get("ports") or []:
                if not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort", 0)
    retype(POD_SCHEMA, obj)


def prepare_pod(obj: Obj, old: Obj | None) -> None:
    """PrepareForCreate: status Pending with its QoS class. What admission adds to a Pod (its ServiceAccount,
    priority, default tolerations) is the plugins' (server/admission/), which recompute the class."""
    if old is not None:
        return
    spec = obj.setdefault("spec", {})
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
    retype(POD_SCHEMA, obj)


def _requests_from_limits(container: Obj) -> None:
    """SetDefaults_Pod: a limit without a request makes the request equal to it."""
    resources = container.setdefault("resources", {})
    limits = resources.get("limits")
    if limits:
        requests = resources.setdefault("requests", {})
        for name, value in limits.items():
            requests.setdefault(name, value)


def qos_class(spec: Obj) -> str:
    """qos.GetPodQOS: BestEffort without cpu/memory requests or limits; Guaranteed when every container
    limits both and requests equal limits; Burstable otherwise."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for container in (*(spec.get("containers") or []), *(spec.get("initContainers") or [])):
        resources = container.get("resources") or {}
        for name, value in (resources.get("requests") or {}).items():
            if name in QOS_RESOURCES and parse_quantity(value).sign() > 0:
                requests[name] = _add(requests.get(name), value)
        found = set()
        for name, value in (resources.get("limits") or {}).items():
            if name in QOS_RESOURCES and parse_quantity(value).sign() > 0:
                found.add(name)
                limits[name] = _add(limits.get(name), value)
        if found != set(QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests.keys() == limits.keys() and all(
            requests[name].compare(limits[name]) == 0 for name in requests):
        return "Guaranteed"
    return "Burstable"


def _add(total: Any, value: str) -> Any:
    q = parse_quantity(value)
    if total is None:
        return q
    low = min(total.exponent, q.exponent)
    total.coefficient = total.coefficient * 10 ** (total.exponent - low) + q.coefficient * 10 ** (q.exponent - low)
    total.exponent = low
    return total


# --- validation --------------------------------------------------------------------------------------------------


def validate_pod(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs = podspec.validate_pod_spec(spec, "spec", is_pod=True)
    node = spec.get("nodeName") or ""
    if node:
        errs.extend(FieldError.invalid("spec.nodeName", node, m) for m in names.is_dns1123_subdomain(node))
    if old is not None:
        errs.extend(_validate_spec_update(spec, old.get("spec") or {}))
    elif spec.get("ephemeralContainers"):  # ValidatePodCreate: only pods/ephemeralcontainers adds them
        errs.append(FieldError.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    return errs


def _validate_spec_update(spec: Obj, old: Obj) -> list[FieldError]:
    """ValidatePodUpdate: only images, activeDeadlineSeconds, added tolerations and a negative grace period
    may change. kube appends a cmp.Diff of its internal structs; here the changed fields are listed instead."""
    munged = copy.deepcopy(spec)
    for field in ("containers", "initContainers"):
        for index, container in enumerate(munged.get(field) or []):
            old_list = old.get(field) or []
            if index < len(old_list) and "image" in old_list[index]:
                container["image"] = old_list[index]["image"]
    for field in ("activeDeadlineSeconds", "schedulingGates"):
        if field in old:
            munged[field] = old[field]
        else:
            munged.pop(field, None)
    old_tolerations = old.get("tolerations") or []
    if all(t in (munged.get("tolerations") or []) for t in old_tolerations):
        munged["tolerations"] = old_tolerations
    grace = old.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    if not munged.get("tolerations") and not old_tolerations:
        munged.pop("tolerations", None)
        old = {k: v for k, v in old.items() if k != "tolerations"}
    if munged == old:
        return []
    changed = sorted(k for k in {*munged, *old} if munged.get(k) != old.get(k))
    diff = "".join(f"  spec.{k}\n" for k in changed)
    return [FieldError.forbidden("spec", f"{POD_UPDATE_FORBIDDEN}\n{diff}")]


def pod_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """podStrategy.WarningsOnCreate: a name pods' hostnames cannot take, and the pod spec's warnings; an update
    warns of nothing (a Pod's writers are mostly controllers)."""
    if old is not None:
        return []
    return podwarnings.name_warnings(meta.meta(obj).get("name"), podwarnings.POD_HOSTNAME) + \
        podwarnings.pod_warnings(obj)


# --- field selectors ---------------------------------------------------------------------------------------------


def _spec(obj: Obj) -> Obj:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def _status(obj: Obj) -> Obj:
    value = obj.get("status")
    return value if isinstance(value, dict) else {}


def _first_pod_ip(obj: Obj) -> str:
    ips = _status(obj).get("podIPs") or []
    return str(ips[0].get("ip", "")) if ips else ""


FIELD_GETTERS = {
    "spec.nodeName": lambda o: str(_spec(o).get("nodeName", "")),
    "spec.restartPolicy": lambda o: str(_spec(o).get("restartPolicy", "")),
    "spec.schedulerName": lambda o: str(_spec(o).get("schedulerName", "")),
    "spec.serviceAccountName": lambda o: str(_spec(o).get("serviceAccountName", "")),
    "spec.hostNetwork": lambda o: "true" if _spec(o).get("hostNetwork") else "false",
    "status.phase": lambda o: str(_status(o).get("phase", "")),
    "status.podIP": _first_pod_ip,  # kube-apiserver has no status.podIPs selector (PodToSelectableFields)
    "status.nominatedNodeName": lambda o: str(_status(o).get("nominatedNodeName", "")),
}


# --- /binding ----------------------------------------------------------------------------------------------------

BINDING_SCHEMA = ProtoSchema(core_v1.Binding)
BINDING_KIND = Resource(group="", version="v1", resource="bindings", kind="Binding", singular="binding",
                        namespaced=True, schema=BINDING_SCHEMA, verbs=("create",))


async def bind_legacy(ctx: Context, resource: Resource, req: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
    """LegacyBindingREST: POST namespaces/{ns}/bindings binds the Pod the Binding names, as pods/{name}/binding
    does (its namespace checked against the request's first, as kube's create handler checks it)."""
    binding, _ = body.decode(BINDING_KIND, req.object, options.field_validation(
        req.options.fieldValidation, "CreateOptions"))
    m = meta.meta(binding)
    if m.get("namespace") and m["namespace"] != req.path.namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request")
    pods = ctx.registry.get("", "v1", "pods")
    assert pods is not None
    path = core_pb2.ResourcePath(version="v1", resource="pods", namespace=req.path.namespace,
                                 name=str(m.get("name", "")), subresource="binding")
    bound = core_pb2.CreateRequest()
    bound.CopyFrom(req)
    bound.path.CopyFrom(path)
    return await _bind(ctx, pods, bound, admitted_as=(resource, ""))


# POST namespaces/{ns}/bindings: a Binding is never stored; its create handler binds the Pod it names.
BINDINGS = Resource(group="", version="v1", resource="bindings", kind="Binding", singular="binding",
                    namespaced=True, schema=BINDING_SCHEMA, verbs=("create",),
                    handlers=Handlers(create=bind_legacy))


async def bind(ctx: Context, resource: Resource, req: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
    """BindingREST.Create: set spec.nodeName (and the binding's annotations) on a Pod not yet bound, and its
    PodScheduled condition; answers a Success Status, 201. The Binding's uid and resourceVersion are
    preconditions on the Pod. Admission sees a CREATE of the Binding through pods/binding, as kube's create
    handler and BindingREST hand it (the Pod's own write is the storage's, admitted by nothing)."""
    return await _bind(ctx, resource, req, admitted_as=(resource, "binding"))


async def _bind(ctx: Context, resource: Resource, req: core_pb2.CreateRequest, *,
                admitted_as: tuple[Resource, str]) -> core_pb2.CreateResponse:
    """bind, admitted as a CREATE of (resource, subresource): pods/binding, or the legacy bindings resource."""
    dry_run = options.dry_run(req.options.dryRun, "CreateOptions")
    binding, warnings = body.decode(BINDING_KIND, req.object, options.field_validation(
        req.options.fieldValidation, "CreateOptions"))
    m = meta.meta(binding)
    name = req.path.name
    if m.get("name", "") != name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    target = binding.get("target") or {}
    problems = []
    if target.get("kind") and target["kind"] != "Node":
        problems.append(FieldError.not_supported("target.kind", target["kind"], ("Node", "<empty>")))
    if not target.get("name"):
        problems.append(FieldError.required("target.name"))
    if problems:  # kube returns the aggregate as a plain error: an internal error
        raise errors.internal(names.join_errors(problems))
    admitted, subresource = admitted_as
    attrs = Attributes(admitted, "CREATE", name, req.path.namespace, binding, None, dry_run, subresource=subresource,
                       options=create.write_options("CreateOptions", dry_run, None), warnings=warnings,
                       kind=BINDING_KIND)
    await admit(ctx, attrs)
    m, target = meta.meta(binding), binding.get("target") or {}  # as admission left them

    def produce(current: Obj) -> tuple[Obj, list[str]]:  # setPodHostAndAnnotations, on the Pod as it is now
        pod = copy.deepcopy(current)
        pm = meta.meta(pod)
        if m.get("uid") and m["uid"] != pm.get("uid"):
            raise errors.conflict(resource.resource, resource.group, name, (
                f"Precondition failed: UID in precondition: {m['uid']}, UID in object meta: {pm.get('uid')}"))
        if m.get("resourceVersion") and m["resourceVersion"] != pm.get("resourceVersion"):
            raise errors.conflict(resource.resource, resource.group, name)
        refusal = _bind_refusal(pod, name)
        if refusal:
            raise errors.conflict("pods/binding", "", name, refusal)
        pod.setdefault("spec", {})["nodeName"] = target["name"]
        if m.get("annotations"):
            pm.setdefault("annotations", {}).update(m["annotations"])
        _set_scheduled(pod)
        return pod, warnings

    # BindingREST writes through the storage's GuaranteedUpdate: the Pod's strategy does not run.
    await guaranteed_update(ctx, resource, req.path, produce, dry_run=dry_run, accept=render.JSON, manager=None,
                            direct=True)
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    return core_pb2.CreateResponse(object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON,
                                                             data=orjson.dumps(status)), warnings=warnings)


def _bind_refusal(pod: Obj, name: str) -> str:
    if meta.meta(pod).get("deletionTimestamp"):
        return f"pod {name} is being deleted, cannot be assigned to a host"
    node = _spec(pod).get("nodeName")
    if node:
        return f"pod {name} is already assigned to node {names.go_quote(node)}"
    if _spec(pod).get("schedulingGates"):
        return f"pod {name} has non-empty .spec.schedulingGates"
    return ""


def _set_scheduled(pod: Obj) -> None:
    """podutil.UpdatePodCondition(PodScheduled=True): the transition time changes only with the status."""
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == "PodScheduled":
            if condition.get("status") != "True":
                condition["status"] = "True"
                condition["lastTransitionTime"] = meta.now()
            return
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": meta.now()})


@dataclass(frozen=True, kw_only=True, eq=False)
class PodStrategy(Declared):
    """The Pod's rules: defaults, PrepareForCreate, validation (Declared) and graceful deletion."""

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """podStrategy.CheckGracefulDelete: the requested period, else terminationGracePeriodSeconds; 0 for a Pod
        on no node or already finished; a negative period is 1."""
        spec, status = _spec(obj), _status(obj)
        period = requested if requested is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period


PODS = Resource(
    group="", version="v1", resource="pods", kind="Pod", singular="pod", namespaced=True,
    schema=POD_SCHEMA,
    short_names=("po",),
    categories=("all",),
    subresources=(
        # podStatusStrategy: ownerReferences stay as stored (old kubelets corrupted them).
        Subresource("status", "Pod", ("get", "patch", "update"), ("status",),
                    metadata_reset=("deletionTimestamp", "ownerReferences")),
        Subresource("binding", "Binding", ("create",), proto_message="k8s.io.api.core.v1.Binding",
                    handlers=Handlers(create=bind)),
        Subresource("eviction", "Eviction", ("create",), group="policy", version="v1",
                    proto_message="k8s.io.api.policy.v1.Eviction", handlers=Handlers(create=evict)),
        ephemeral.EPHEMERAL_CONTAINERS,
        *podconnect.SUBRESOURCES,
        replace(proxy.POD_PROXY, handlers=Handlers(connect=proxy.pod)),
    ),
    field_getters=FIELD_GETTERS,
    strategy=PodStrategy(defaults=default_pod, prepare=prepare_pod, validation=validate_pod, warnings=pod_warnings,
                         returns_deleted_object=True),
)
