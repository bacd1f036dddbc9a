"""POST pods/{name}/eviction: delete a Pod as its PodDisruptionBudget allows, as kube-apiserver's EvictionREST does
(pkg/registry/core/pod/storage/eviction.go, kube 1.28).

The body is a policy/v1 Eviction (a policy/v1beta1 one is accepted too: the same fields). The order of kube's
answers:
- the Eviction names another pod: 400; its deleteOptions.dryRun differs from the request's: 400 (kube answers
  its plain error as a reasonless 500; Capstan never answers a client's mistake with a 500);
- a Pod that is Pending, Succeeded, Failed or already being deleted is deleted at once, no budget consulted;
- otherwise the namespace's budgets whose (non-empty) selector matches the Pod's labels: none deletes the Pod;
  more than one answers kube's Status {code 500, "This pod has more than one PodDisruptionBudget, ..."}
  (kept as kube answers it: a misconfiguration of the cluster, not of the request, and clients such as
  kubectl drain report it by that message); exactly one is checked and charged:
  a budget its controller has not observed yet (status.observedGeneration < generation) or with
  disruptionsAllowed 0 answers 429 TooManyRequests with a DisruptionBudget cause; one allowing a disruption is
  decremented and the Pod recorded in status.disruptedPods by an update of the budget's /status (the one
  guaranteed-update path: decided again on the budget as it is when another writer got there first); a Pod
  that is not Ready and whose budget is met (or says AlwaysAllow) is deleted without charging,
  on the condition that it did not change meanwhile.
- the Pod is deleted with the Eviction's deleteOptions (graceful deletion as a DELETE does) and the answer is a
  Success Status, 201.
Admission sees the request as kube's create handler hands it: a CREATE of the policy/v1 Eviction through
pods/eviction, after the checks of its name and dryRun; the Pod's delete itself is not admitted again (kube's
EvictionREST deletes with ValidateAllObjectFunc).

A budget's status is the disruption controller's (server/controllers/disruption.py, kube-controller-manager's
`disruption`, run when named or with `--controllers='*'`): until it has written it (observedGeneration 0), and
on a core that does not run it, every eviction of a covered Pod answers 429, as on a cluster whose controller
has not caught up.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from google.protobuf import json_format

from capstan.api.meta.v1 import meta_pb2
from capstan.api.policy.v1 import policy_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds.policy import PODDISRUPTIONBUDGETS
from server.machinery import errors, meta
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.values import Obj
from server.objects import body, create, delete, options, render
from server.objects.admitting import Attributes, admit
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.objects.update import guaranteed_update
from server.registry.resources import Resource

EVICTION_SCHEMA = ProtoSchema(policy_pb2.Eviction)
EVICTION_V1 = Resource(group="policy", version="v1", resource="evictions", kind="Eviction", singular="eviction",
                       namespaced=True, schema=EVICTION_SCHEMA, verbs=("create",))
EVICTION_V1BETA1 = Resource(group="policy", version="v1beta1", resource="evictions", kind="Eviction",
                            singular="eviction", namespaced=True, schema=EVICTION_SCHEMA, verbs=("create",))
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"  # policyv1.DisruptionBudgetCause
MAX_DISRUPTED_PODS = 2000  # MaxDisruptedPodSize


async def evict(ctx: Context, pods: Resource, req: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
    """EvictionREST.Create for the Pod req.path.name; answers kube's Success Status, 201."""
    eviction, warnings = body.decode(_version_of(req.object), req.object, options.field_validation(
        req.options.fieldValidation, "CreateOptions"))
    name, namespace = req.path.name, req.path.namespace
    if meta.meta(eviction).get("name", "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    opts = _delete_options(eviction.get("deleteOptions"), list(req.options.dryRun))
    dry_run, _policy = options.delete_options(opts)
    request_dry_run = options.dry_run(req.options.dryRun, "CreateOptions")
    await admit(ctx, Attributes(pods, "CREATE", name, namespace, eviction, None, request_dry_run,
                                subresource="eviction", kind=EVICTION_V1, warnings=warnings,
                                options=create.write_options("CreateOptions", request_dry_run, None)))
    opts = _delete_options(eviction.get("deleteOptions"), list(req.options.dryRun))  # as admission left it
    dry_run, _policy = options.delete_options(opts)
    pod, revision = await _pod(ctx, pods, namespace, name)
    if _can_ignore_budgets(pod):
        deleting = opts
        if _enforces_resource_version(pod) and not opts.preconditions.HasField("resourceVersion"):
            deleting = _with_resource_version(opts, revision)
        await delete.delete_object(ctx, pods, namespace, name, deleting, dry_run, core_pb2.ENCODING_JSON,
                                   admitted=False)
        return _success(warnings)
    budgets = await _budgets_of(ctx, pod, namespace)
    if len(budgets) > 1:
        raise errors.ApiError(errors.status(500, "", MULTIPLE_BUDGETS, with_details=False))
    unhealthy_allowed = False
    budget_name = ""
    if budgets:
        budget = budgets[0]
        budget_name = meta.meta(budget).get("name", "")
        unhealthy_allowed = not _ready(pod) and _unhealthy_evictable(budget)
        if not unhealthy_allowed:
            await _charge(ctx, budget, namespace, name, dry_run)
    deleting = _with_resource_version(opts, revision) if unhealthy_allowed else opts
    try:
        await delete.delete_object(ctx, pods, namespace, name, deleting, dry_run, core_pb2.ENCODING_JSON,
                                   admitted=False)
    except errors.ApiError as err:
        if err.code == 409 and unhealthy_allowed and not opts.preconditions.HasField("resourceVersion"):
            raise _still_processing(budget_name) from None
        raise
    return _success(warnings)


def _version_of(raw: core_pb2.RawObject) -> Resource:
    """The Eviction's version as its JSON body names it (AcceptsGroupVersion: policy/v1 and policy/v1beta1)."""
    if raw.encoding in (core_pb2.ENCODING_JSON, core_pb2.ENCODING_JSON_TEXT):
        try:
            doc = orjson.loads(raw.data or raw.json.encode())
        except orjson.JSONDecodeError:
            return EVICTION_V1
        if isinstance(doc, dict) and doc.get("apiVersion") == EVICTION_V1BETA1.api_version:
            return EVICTION_V1BETA1
    return EVICTION_V1


def _delete_options(sent: Obj | None, request_dry_run: list[str]) -> meta_pb2.DeleteOptions:
    """propagateDryRun: the Eviction's deleteOptions with the request's dryRun when they name none."""
    opts = meta_pb2.DeleteOptions()
    if sent:
        json_format.ParseDict(sent, opts, ignore_unknown_fields=True)
    if not opts.dryRun:
        opts.dryRun.extend(request_dry_run)
    elif request_dry_run and list(opts.dryRun) != request_dry_run:
        raise errors.bad_request(
            f"Non-matching dry-run options in request and content: [{' '.join(request_dry_run)}] and "
            f"[{' '.join(opts.dryRun)}]")
    return opts


def _with_resource_version(opts: meta_pb2.DeleteOptions, revision: int) -> meta_pb2.DeleteOptions:
    """setPreconditionsResourceVersion: the delete holds only while the Pod is as it was read."""
    copied = meta_pb2.DeleteOptions()
    copied.CopyFrom(opts)
    copied.preconditions.resourceVersion = str(revision)
    return copied


async def _pod(ctx: Context, pods: Resource, namespace: str, name: str) -> tuple[Obj, int]:
    got = await store_call(ctx.store.get(pods.key(namespace, name)))
    if got.kv is None:
        raise errors.not_found(pods.resource, pods.group, name)
    return render.load(got.kv.value), got.kv.mod_revision


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _can_ignore_budgets(pod: Obj) -> bool:
    """canIgnorePDB: a terminal, pending or terminating Pod disrupts nothing more by going."""
    return _phase(pod) in ("Succeeded", "Failed", "Pending") or bool(meta.meta(pod).get("deletionTimestamp"))


def _enforces_resource_version(pod: Obj) -> bool:
    """shouldEnforceResourceVersion: a Pending Pod must not become Ready between the read and the delete."""
    return _phase(pod) not in ("Succeeded", "Failed") and not meta.meta(pod).get("deletionTimestamp")


def _ready(pod: Obj) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _unhealthy_evictable(budget: Obj) -> bool:
    """An unready Pod goes without charging the budget when the budget says AlwaysAllow, or when it is met
    (currentHealthy >= desiredHealthy > 0: IfHealthyBudget, the default)."""
    if (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = budget.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return int(status.get("currentHealthy") or 0) >= desired > 0


async def _budgets_of(ctx: Context, pod: Obj, namespace: str) -> list[Obj]:
    """getPodDisruptionBudgets: the namespace's budgets whose selector is valid, not empty, and matches."""
    listed = await store_call(ctx.store.list(PODDISRUPTIONBUDGETS.key_prefix(namespace)))
    pod_labels = meta.meta(pod).get("labels") or {}
    matching = []
    for kv in listed.kvs:
        budget = render.load(kv.value)
        try:
            parsed = labels.from_label_selector((budget.get("spec") or {}).get("selector"))
        except (labels.SelectorError, TypeError):
            continue  # a budget whose selector does not parse matches no pod
        if not parsed.empty and parsed.matches(pod_labels):  # an empty selector matches nothing here
            matching.append(budget)
    return matching


async def _charge(ctx: Context, budget: Obj, namespace: str, pod_name: str, dry_run: bool) -> None:
    """checkAndDecrement, written as an update of the budget's /status: re-decided on the budget as it is
    whenever another writer got there first (RetryOnConflict)."""
    name = meta.meta(budget).get("name", "")
    path = core_pb2.ResourcePath(group=PODDISRUPTIONBUDGETS.group, version=PODDISRUPTIONBUDGETS.version,
                                 resource=PODDISRUPTIONBUDGETS.resource, namespace=namespace, name=name,
                                 subresource="status")

    def produce(current: Obj) -> tuple[Obj, list[str]]:
        charged = copy.deepcopy(current)
        _check(charged)
        status = charged.setdefault("status", {})
        status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
        if status["disruptionsAllowed"] == 0:
            _insufficient_pods(status)
        if not dry_run:
            status.setdefault("disruptedPods", {})[pod_name] = meta.now()
        return charged, []

    await guaranteed_update(ctx, PODDISRUPTIONBUDGETS, path, produce, dry_run=dry_run, accept=render.JSON,
                            manager=None)


def _check(budget: Obj) -> None:
    """What refuses a charge: an unobserved budget, a negative or exhausted one, too many pending evictions."""
    m, status = meta.meta(budget), budget.get("status") or {}
    name = m.get("name", "")
    if int(status.get("observedGeneration") or 0) < int(m.get("generation") or 0):
        raise _still_processing(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.forbidden("poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        raise errors.forbidden("poddisruptionbudget", "policy", name,
                               "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        raise _too_many(f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy "
                        f"pods and has {int(status.get('currentHealthy') or 0)} currently", retry_after=0)


def _insufficient_pods(status: Obj) -> None:
    """pdbhelper.UpdateDisruptionAllowedCondition with nothing left to allow: DisruptionAllowed False,
    InsufficientPods; the transition time changes only with the condition's status."""
    conditions: list[Any] = status.setdefault("conditions", [])
    wanted = {"type": "DisruptionAllowed", "status": "False", "observedGeneration": status.get("observedGeneration", 0),
              "reason": "InsufficientPods", "message": ""}
    for condition in conditions:
        if condition.get("type") == "DisruptionAllowed":
            if condition.get("status") != "False":
                condition["lastTransitionTime"] = meta.now()
            condition.update(wanted)
            return
    conditions.append({**wanted, "lastTransitionTime": meta.now()})


def _still_processing(budget_name: str) -> errors.ApiError:
    """createTooManyRequestsError: 429 asking to retry after 10 s."""
    return _too_many(f"The disruption budget {budget_name} is still being processed by the server.", retry_after=10)


def _too_many(cause: str, *, retry_after: int) -> errors.ApiError:
    status = errors.status(429, "TooManyRequests", VIOLATES, retry_after=retry_after,
                           causes=[errors.Cause(DISRUPTION_BUDGET_CAUSE, cause)])
    return errors.ApiError(status)


def _success(warnings: list[str]) -> core_pb2.CreateResponse:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    return core_pb2.CreateResponse(object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON,
                                                             data=orjson.dumps(status)), warnings=warnings)
