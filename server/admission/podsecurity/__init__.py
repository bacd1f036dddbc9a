"""The PodSecurity admission plugin (plugin/pkg/admission/security/podsecurity over
k8s.io/pod-security-admission), on by default as in kube 1.28: the Pod Security Standards a namespace's
`pod-security.kubernetes.io/*` labels choose (levels.py), checked as kube checks them (checks.py).

- A Pod create, or an update that changes a container's image or adds an ephemeral container (kube ignores
  every other Pod update), is judged against the namespace's enforce level: a violation is kube's 403
  `pods "p" is forbidden: violates PodSecurity "restricted:latest": ...`. Writes through pods/ephemeralcontainers
  are judged as updates; through exec, attach, binding, eviction, log, portforward, proxy and status never.
- The audit level's violations become the audit annotation `pod-security.kubernetes.io/audit-violations`, the
  enforced policy `pod-security.kubernetes.io/enforce-policy`; the warn level's a Warning
  (`would violate PodSecurity "baseline:latest": ...`) on a write that is admitted.
- The workload kinds with a pod template (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
  ReplicationControllers, PodTemplates) get the audit annotation and the warning, never a refusal.
- A Namespace whose labels kube cannot parse is refused on create, and on an update that changes the errors
  (422, kube's field errors); pods in a namespace with such labels are judged as kube falls back (a bad enforce
  level enforces restricted, a bad audit or warn level is privileged, a bad version is latest), with the parse
  error as the audit annotation `pod-security.kubernetes.io/error`.
- A Namespace update that makes enforce stricter warns about the namespace's existing pods that violate it
  (the first 3000 pods, one evaluation per controller first, in at most one second), as kube words it.

The configuration is kube's PodSecurityConfiguration: default policy (every mode privileged:latest) and
exemptions by username, namespace and runtime class (none by default). Requests on any other kind return at
once; a Pod write reads its namespace from the store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from server.admission import Plugin
from server.admission.podsecurity.levels import (
    AUDIT_LABEL,
    AUDIT_VERSION_LABEL,
    DEFAULT_POLICY,
    ENFORCE_LABEL,
    ENFORCE_VERSION_LABEL,
    LABEL_PREFIX,
    PRIVILEGED,
    PRIVILEGED_LATEST,
    WARN_LABEL,
    WARN_VERSION_LABEL,
    LevelVersion,
    Policy,
    compare_levels,
    policy_to_evaluate,
)
from server.auth import caller
from server.machinery import apimetrics, errors
from server.machinery.validation.names import FieldError, join_errors
from server.machinery.values import Obj
from server.machinery.version import KUBE_MINOR
from server.objects import render, validate
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.storeerrors import store_call

if TYPE_CHECKING:
    from server.admission.podsecurity import checks

NAME = "PodSecurity"

# The kinds whose objects embed a pod template (DefaultPodSpecExtractor), by (group, resource).
_TEMPLATED = frozenset((
    ("", "replicationcontrollers"), ("", "podtemplates"), ("apps", "replicasets"), ("apps", "deployments"),
    ("apps", "statefulsets"), ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs"),
))
# Pod subresources kube never judges; a write through any other (ephemeralcontainers) is judged as the Pod's.
_IGNORED_POD_SUBRESOURCES = frozenset(("exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                                       "status"))
_MAX_PODS_TO_CHECK = 3000
_POD_CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Exemptions:
    usernames: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    runtime_classes: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Configuration:
    """kube's PodSecurityConfiguration: the policy of a namespace without labels, and who is never judged."""

    defaults: Policy = DEFAULT_POLICY
    exemptions: Exemptions = field(default_factory=Exemptions)


def plugins(on: frozenset[str], configuration: Configuration | None = None) -> list[Plugin]:
    """The PodSecurity plugin where `on` names it (kube's default configuration unless one is given)."""
    if NAME not in on:
        return []
    admission = _Admission(configuration or Configuration())
    return [Plugin(NAME, frozenset(("CREATE", "UPDATE")), validate=admission.validate,
                   resources=frozenset({("", "pods"), ("", "namespaces"), *_TEMPLATED}))]


@dataclass(slots=True)
class _Response:
    """What one evaluation answers: kube's AdmissionResponse, applied to the request by `_apply`."""

    refusal: errors.ApiError | None = None
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


def _apply(attrs: Attributes, response: _Response) -> None:
    attrs.warnings.extend(response.warnings)
    for key, value in response.annotations.items():
        attrs.audit_annotations[LABEL_PREFIX + key] = value
    if response.refusal is not None:
        raise response.refusal


def _labels(obj: Obj | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _forbidden(attrs: Attributes, message: str) -> errors.ApiError:
    """NewForbidden for the request's resource (kube leaves the name out of the message when there is none)."""
    resource = attrs.resource
    if attrs.name:
        return errors.forbidden(resource.resource, resource.group, attrs.name, message)
    text = f"{errors.qualified(resource.resource, resource.group)} is forbidden: {message}"
    return errors.ApiError(errors.status(403, "Forbidden", text, group=resource.group, kind=resource.resource))


def _significant_update(pod: Obj, old: Obj) -> bool:
    """isSignificantPodUpdate: a container's image changed, or an ephemeral container was added or changed."""
    spec, old_spec = pod.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        new, was = spec.get(key) or [], old_spec.get(key) or []
        if len(new) != len(was) or any(a.get("image") != b.get("image") for a, b in zip(new, was, strict=True)):
            return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    return any(c.get("name") not in old_ephemeral or c.get("image") != old_ephemeral[c.get("name")].get("image")
               for c in spec.get("ephemeralContainers") or [])


def _template(resource: str, obj: Obj) -> tuple[Obj, Obj] | None:
    """The pod template's metadata and spec of a templated kind; None when it has none (a ReplicationController
    may leave it out)."""
    spec = obj.get("spec") or {}
    if resource == "podtemplates":
        template = obj.get("template")
    elif resource == "cronjobs":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    else:
        template = spec.get("template")
    if template is None and resource == "replicationcontrollers":
        return None
    template = template if isinstance(template, dict) else {}
    return template.get("metadata") or {}, template.get("spec") or {}


def _metric_labels(attrs: Attributes) -> tuple[str, str, str]:
    """request_operation, resource and subresource as kube's metrics name them: a Pod, a namespace, or any other
    kind (a workload with a pod template) as "controller"."""
    resource = attrs.resource.resource
    kind = "pod" if resource == "pods" else "namespace" if resource == "namespaces" else "controller"
    return attrs.operation.lower(), kind, attrs.subresource


def _exempted(attrs: Attributes) -> None:
    apimetrics.pod_security_exemption(*_metric_labels(attrs))


def _evaluated(attrs: Attributes, decision: str, policy: LevelVersion, mode: str) -> None:
    """RecordEvaluation: the version is "latest" for latest and for privileged, "future" past kube 1.28's."""
    if policy.minor is None or policy.level == PRIVILEGED:
        version = "latest"
    else:
        version = f"v1.{policy.minor}" if policy.minor <= int(KUBE_MINOR) else "future"
    apimetrics.pod_security_evaluation(decision, policy.level, version, mode, *_metric_labels(attrs))


class _Admission:
    """kube's Admission for one configuration."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration

    async def validate(self, ctx: Context, attrs: Attributes) -> None:
        group, resource = attrs.resource.group, attrs.resource.resource
        if group == "" and resource == "pods":
            _apply(attrs, await self._pod(ctx, attrs))
        elif group == "" and resource == "namespaces":
            _apply(attrs, await self._namespace(ctx, attrs))
        elif (group, resource) in _TEMPLATED:
            _apply(attrs, await self._templated(ctx, attrs))

    def _policy(self, labels: Mapping[str, str]) -> tuple[Policy, list[FieldError]]:
        return policy_to_evaluate(labels, self.configuration.defaults)

    def _exempt_namespace(self, namespace: str) -> bool:
        return bool(namespace) and namespace in self.configuration.exemptions.namespaces

    def _exempt_user(self) -> bool:
        name = caller.current().user.name
        return bool(name) and name in self.configuration.exemptions.usernames

    async def _namespace_labels(self, ctx: Context, namespace: str) -> dict[str, str] | None:
        namespaces = ctx.registry.get("", "v1", "namespaces")
        if namespaces is None:
            return None
        got = await store_call(ctx.store.get(namespaces.key("", namespace)))
        return _labels(render.load(got.kv.value)) if got.kv is not None else None

    async def _labels_unless_exempt(self, ctx: Context, attrs: Attributes) -> _Response | dict[str, str] | None:
        """The exemption's answer for an exempt namespace or user; else the namespace's labels (None: no such
        namespace)."""
        if self._exempt_namespace(attrs.namespace):
            _exempted(attrs)
            return _Response(annotations={"exempt": "namespace"})
        if self._exempt_user():
            _exempted(attrs)
            return _Response(annotations={"exempt": "user"})
        labels = await self._namespace_labels(ctx, attrs.namespace)
        if labels is None:
            apimetrics.pod_security_error(True, *_metric_labels(attrs))
        return labels

    async def _pod(self, ctx: Context, attrs: Attributes) -> _Response:
        if attrs.subresource in _IGNORED_POD_SUBRESOURCES or attrs.kind is not None or attrs.obj is None:
            return _Response()
        labels = await self._labels_unless_exempt(ctx, attrs)
        if isinstance(labels, _Response):
            return labels
        if labels is None:
            status = f'failed to lookup namespace "{attrs.namespace}"'
            return _Response(errors.internal(status), annotations={
                "error": f'Internal error occurred: {status}: namespaces "{attrs.namespace}" not found'})
        policy, errs = self._policy(labels)
        if not errs and policy.fully_privileged():
            _evaluated(attrs, "allow", policy.enforce, "enforce")
            return _Response(annotations={"enforce-policy": str(PRIVILEGED_LATEST)})
        if attrs.operation == "UPDATE" and attrs.old is not None and not _significant_update(attrs.obj, attrs.old):
            return _Response()
        return self._evaluate(attrs, policy, errs, attrs.obj.get("metadata") or {}, attrs.obj.get("spec") or {},
                              enforce=True)

    async def _templated(self, ctx: Context, attrs: Attributes) -> _Response:
        if attrs.subresource or attrs.kind is not None or attrs.obj is None:
            return _Response()
        labels = await self._labels_unless_exempt(ctx, attrs)
        if isinstance(labels, _Response):
            return labels
        if labels is None:
            return _Response(annotations={"error": f'failed to lookup namespace "{attrs.namespace}": '
                                                   f'namespaces "{attrs.namespace}" not found'})
        policy, errs = self._policy(labels)
        if not errs and policy.warn.level == PRIVILEGED and policy.audit.level == PRIVILEGED:
            return _Response()
        template = _template(attrs.resource.resource, attrs.obj)
        if template is None:
            return _Response()
        return self._evaluate(attrs, policy, errs, *template, enforce=False)

    def _evaluate(self, attrs: Attributes, policy: Policy, errs: list[FieldError], metadata: Obj, spec: Obj, *,
                  enforce: bool) -> _Response:
        """EvaluatePod: enforce (for Pods), then audit, then warn (only on what is admitted), each level and
        version evaluated once."""
        runtime_class = spec.get("runtimeClassName")
        if runtime_class and runtime_class in self.configuration.exemptions.runtime_classes:
            _exempted(attrs)
            return _Response(annotations={"exempt": "runtimeClass"})
        response = _Response()
        if errs:
            apimetrics.pod_security_error(False, *_metric_labels(attrs))
            response.annotations["error"] = f"Failed to parse policy: {join_errors(errs)}"
        from server.admission.podsecurity import checks  # the checks load with the first policy to check

        results: dict[LevelVersion, list[checks.Violation]] = {}

        def evaluated(level_version: LevelVersion) -> list[checks.Violation]:
            if level_version not in results:
                results[level_version] = checks.evaluate(level_version.level, level_version.minor, metadata, spec)
            return results[level_version]

        if enforce:
            response.annotations["enforce-policy"] = str(policy.enforce)
            violations = evaluated(policy.enforce)
            _evaluated(attrs, "deny" if violations else "allow", policy.enforce, "enforce")
            if violations:
                response.refusal = _forbidden(attrs, f'violates PodSecurity "{policy.enforce}": '
                                                     f"{checks.forbidden_detail(violations)}")
        violations = evaluated(policy.audit)
        if violations:
            _evaluated(attrs, "deny", policy.audit, "audit")
            response.annotations["audit-violations"] = (f'would violate PodSecurity "{policy.audit}": '
                                                        f"{checks.forbidden_detail(violations)}")
        if response.refusal is None:
            violations = evaluated(policy.warn)
            if violations:
                _evaluated(attrs, "deny", policy.warn, "warn")
                response.warnings.append(f'would violate PodSecurity "{policy.warn}": '
                                         f"{checks.forbidden_detail(violations)}")
        return response

    async def _namespace(self, ctx: Context, attrs: Attributes) -> _Response:
        """ValidateNamespace: labels kube cannot parse are refused (on update only when they changed the errors);
        a stricter enforce level warns about the existing pods that violate it."""
        if attrs.subresource or attrs.obj is None:
            return _Response()
        labels = _labels(attrs.obj)
        policy, errs = self._policy(labels)
        name = str((attrs.obj.get("metadata") or {}).get("name") or attrs.name)
        if attrs.operation == "CREATE":
            if errs:
                validate.raise_if_invalid(attrs.resource, attrs.obj, errs)
            return self._exempt_namespace_response(name, policy, labels)
        if attrs.operation != "UPDATE" or attrs.old is None:
            return _Response()
        old_policy, old_errs = self._policy(_labels(attrs.old))
        if errs and (not old_errs or errs != old_errs):
            validate.raise_if_invalid(attrs.resource, attrs.obj, errs)
        new, old = policy.enforce, old_policy.enforce
        if new == old or new.level == PRIVILEGED or (new.minor == old.minor
                                                    and compare_levels(new.level, old.level) < 1):
            return _Response()
        if self._exempt_namespace(name):
            return self._exempt_namespace_response(name, policy, labels)
        return _Response(warnings=await self._existing_pods(ctx, name, new))

    def _exempt_namespace_response(self, name: str, policy: Policy, labels: Mapping[str, str]) -> _Response:
        """exemptNamespaceWarning: an exempt namespace whose labels ask for a policy that will be ignored."""
        if (not self._exempt_namespace(name) or policy.fully_privileged()
                or policy.equivalent(self.configuration.defaults)):
            return _Response()
        parts = []
        for mode, level_version, level_label, version_label in (
                ("enforce", policy.enforce, ENFORCE_LABEL, ENFORCE_VERSION_LABEL),
                ("audit", policy.audit, AUDIT_LABEL, AUDIT_VERSION_LABEL),
                ("warn", policy.warn, WARN_LABEL, WARN_VERSION_LABEL)):
            if level_version.level != PRIVILEGED and (level_label in labels or version_label in labels):
                parts.append(f"{mode}={level_version}")
        return _Response(warnings=[f'namespace "{name}" is exempt from Pod Security, and the policy '
                                   f"({', '.join(parts)}) will be ignored"])

    async def _existing_pods(self, ctx: Context, namespace: str, enforce: LevelVersion) -> list[str]:
        """EvaluatePodsInNamespace: one warning naming the namespace, then one per distinct set of reasons,
        naming the lexically first pod with it and how many others share it, sorted."""
        deadline = time.monotonic() + _POD_CHECK_SECONDS
        pods_resource = ctx.registry.get("", "v1", "pods")
        if pods_resource is None:
            return []
        try:
            listed = await store_call(ctx.store.list(pods_resource.key_prefix(namespace)))
        except errors.ApiError:
            return ["failed to list pods while checking new PodSecurity enforce level"]
        from server.admission.podsecurity import checks

        pods = self._prioritized([render.load(kv.value) for kv in listed.kvs])
        total = len(pods)
        pods = pods[:_MAX_PODS_TO_CHECK]
        checked = len(pods)
        first: dict[str, str] = {}
        counts: dict[str, int] = {}
        for index, pod in enumerate(pods):
            violations = checks.evaluate(enforce.level, enforce.minor, pod.get("metadata") or {},
                                         pod.get("spec") or {})
            if violations:
                reason = checks.forbidden_reason(violations)
                pod_name = str((pod.get("metadata") or {}).get("name") or "")
                if reason not in first or pod_name < first[reason]:
                    first[reason] = pod_name
                counts[reason] = counts.get(reason, 0) + 1
            if time.monotonic() > deadline:
                checked = index + 1
                break
        warnings = []
        if checked < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first {checked} of {total} "
                            "existing pods")
        if first:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                            f'"{enforce}"')
        decorated = []
        for reason, pod_name in first.items():
            others = counts[reason] - 1
            prefix = (pod_name if not others else f"{pod_name} (and 1 other pod)" if others == 1
                      else f"{pod_name} (and {others} other pods)")
            decorated.append(f"{prefix}: {reason}")
        return warnings + sorted(decorated)

    def _prioritized(self, pods: list[Obj]) -> list[Obj]:
        """prioritizePods: pods of exempt runtime classes left out; the first pod of each controller, then the
        rest of the controllers' pods."""
        first, duplicates = [], []
        seen: set[str] = set()
        for pod in pods:
            runtime_class = (pod.get("spec") or {}).get("runtimeClassName")
            if runtime_class and runtime_class in self.configuration.exemptions.runtime_classes:
                continue
            owners = (pod.get("metadata") or {}).get("ownerReferences") or []
            controller = next((o for o in owners if o.get("controller") is True), None)
            if controller is None:
                first.append(pod)
            elif controller.get("uid") in seen:
                duplicates.append(pod)
            else:
                seen.add(str(controller.get("uid")))
                first.append(pod)
        return first + duplicates
