"""apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet and ControllerRevision: registry entries, defaults and
validation, as kube-apiserver's (pkg/apis/apps/v1/defaults.go, pkg/apis/apps/validation, pkg/registry/apps).

Defaults run on every write (kube defaults every decoded body): a Deployment without a strategy gets
RollingUpdate with maxUnavailable and maxSurge "25%", revisionHistoryLimit 10, progressDeadlineSeconds 600
and replicas 1; its pod template gets the pod spec's defaults. Deployments, ReplicaSets and StatefulSets serve
/scale; the selector of all four controllers may not change after creation (a StatefulSet's through the
Forbidden that guards all but a few of its spec fields).
"""

from __future__ import annotations

import re

from capstan.api.apps.v1 import apps_pb2
from server.kinds import podspec, podwarnings, shaped, templates
from server.kinds.templates import dict_at, get, immutable, nonnegative, selector_errors, semantically_equal
from server.machinery import meta
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.objects import scale
from server.registry.resources import Resource, ScaleRule, Subresource
from server.registry.strategy import Declared

ROLLING_UPDATE, RECREATE, ON_DELETE = "RollingUpdate", "Recreate", "OnDelete"
ORDERED_READY, PARALLEL = "OrderedReady", "Parallel"
RETAIN, DELETE = "Retain", "Delete"
# apps/v1 DaemonSets carry their template generation in this annotation (Convert_apps_DaemonSet_To_v1_DaemonSet).
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
STATEFUL_SET_SPEC_FORBIDDEN = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
STATEFUL_SET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                        "minReadySeconds")
PERCENT = re.compile(r"^[0-9]+%$")
PERCENT_ERROR = names.regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%")


def _status(kind: str, metadata_reset: tuple[str, ...] = ()) -> Subresource:
    """The kind's statusStrategy resets spec and `metadata_reset`; other metadata changes through /status are kept."""
    return Subresource("status", kind, ("get", "patch", "update"), ("status",), metadata_reset=metadata_reset)


# -- int-or-percent fields of rolling updates ----------------------------------------------------------------------


def _percent(value: object) -> int | None:
    """getPercentValue: the number of a valid "N%" string, else None."""
    return int(value[:-1]) if isinstance(value, str) and PERCENT.match(value) else None


def _int_or_percent(value: object) -> int:
    """getIntOrPercentValue: the percentage, else the integer (a string that is neither reads as 0)."""
    percent = _percent(value)
    if percent is not None:
        return percent
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) else 0


def _positive_int_or_percent(value: object, path: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent (an unset value is the integer 0)."""
    if isinstance(value, str):
        return [] if PERCENT.match(value) else [FieldError.invalid(path, names.go_int_or_string(value), PERCENT_ERROR)]
    return nonnegative(value, path)


def _not_over_100_percent(value: object, path: str) -> list[FieldError]:
    percent = _percent(value)
    if percent and percent > 100:
        return [FieldError.invalid(path, names.go_int_or_string(value), "must not be greater than 100%")]
    return []


# -- Deployment ----------------------------------------------------------------------------------------------------


def default_deployment(obj: Obj) -> None:
    """SetDefaults_Deployment and the pod template's defaults."""
    spec = dict_at(obj, "spec")
    spec.setdefault("replicas", 1)
    strategy = dict_at(spec, "strategy")
    strategy.setdefault("type", ROLLING_UPDATE)
    if strategy["type"] == ROLLING_UPDATE:
        rolling = dict_at(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    templates.default_template(spec.get("template"))


def prepare_deployment(obj: Obj, old: Obj | None) -> None:
    """deploymentStrategy.PrepareForCreate/ForUpdate: a new object's empty status; changed annotations raise
    the generation, as a changed spec does (annotations are copied to the Deployment's ReplicaSets)."""
    if old is None:
        obj["status"] = {}
    elif not semantically_equal(meta.meta(obj).get("annotations"), meta.meta(old).get("annotations")):
        meta.meta(obj)["generation"] = meta.meta(old).get("generation", 0) + 1


def _deployment_strategy_errors(strategy: Obj, path: str) -> list[FieldError]:
    kind, rolling = strategy.get("type", ""), strategy.get("rollingUpdate")
    if kind == RECREATE:
        if rolling is not None:
            return [FieldError.forbidden(f"{path}.rollingUpdate",
                                         "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == ROLLING_UPDATE:
        if not isinstance(rolling, dict):
            return [FieldError.required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
        at = f"{path}.rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        errs = (_positive_int_or_percent(unavailable, f"{at}.maxUnavailable")
                + _positive_int_or_percent(surge, f"{at}.maxSurge"))
        if _int_or_percent(unavailable) == 0 and _int_or_percent(surge) == 0:
            errs.append(FieldError.invalid(f"{at}.maxUnavailable", names.go_int_or_string(unavailable),
                                           "may not be 0 when `maxSurge` is 0"))
        return errs + _not_over_100_percent(unavailable, f"{at}.maxUnavailable")
    # The internal struct, as Go's JSON prints it.
    shown = {"Type": kind, "RollingUpdate": rolling}
    return [FieldError.not_supported(path, shown, [RECREATE, ROLLING_UPDATE])]


def _replica_set_like_spec_errors(spec: Obj, *, empty: str) -> list[FieldError]:
    """The start ValidateDeploymentSpec and ValidateReplicaSetSpec share: replicas, selector, template."""
    return (nonnegative(spec.get("replicas"), "spec.replicas")
            + selector_errors(spec.get("selector"), "spec.selector", empty=empty)
            + templates.replica_set_template_errors(spec, "spec"))


def _deployment_spec_errors(spec: Obj) -> list[FieldError]:
    """ValidateDeploymentSpec."""
    errs = _replica_set_like_spec_errors(spec, empty="empty selector is invalid for deployment")
    errs += _deployment_strategy_errors(spec.get("strategy") or {}, "spec.strategy")
    min_ready = spec.get("minReadySeconds", 0)
    errs += nonnegative(min_ready, "spec.minReadySeconds")
    errs += nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        errs += nonnegative(deadline, "spec.progressDeadlineSeconds")
        if deadline <= min_ready:
            errs.append(FieldError.invalid("spec.progressDeadlineSeconds", deadline,
                                           "must be greater than minReadySeconds"))
    return errs


def _selector_unchanged(obj: Obj, old: Obj | None) -> list[FieldError]:
    """apps/v1 refuses to change a controller's selector (the strategies' ValidateUpdate)."""
    if old is None:
        return []
    return immutable(get(obj, "spec", "selector"), get(old, "spec", "selector"), "spec.selector",
                     names.go_label_selector)


def validate_deployment(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _deployment_spec_errors(obj.get("spec") or {}) + _selector_unchanged(obj, old)


# -- ReplicaSet ----------------------------------------------------------------------------------------------------


def default_replica_set(obj: Obj) -> None:
    spec = dict_at(obj, "spec")
    spec.setdefault("replicas", 1)
    templates.default_template(spec.get("template"))


def validate_replica_set(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateReplicaSetSpec (its empty-selector text says "deployment", as upstream's does). On update the
    strategy validates the spec twice (ValidateReplicaSet, then ValidateReplicaSetUpdate): causes repeat."""
    spec = obj.get("spec") or {}
    errs = _replica_set_like_spec_errors(spec, empty="empty selector is invalid for deployment")
    errs += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    if old is not None:
        errs = errs + errs + _selector_unchanged(obj, old)
    return errs


# -- StatefulSet ---------------------------------------------------------------------------------------------------


def default_stateful_set(obj: Obj) -> None:
    """SetDefaults_StatefulSet (StatefulSetAutoDeletePVC is on), the template's and claim templates' defaults."""
    spec = dict_at(obj, "spec")
    spec.setdefault("podManagementPolicy", ORDERED_READY)
    strategy = dict_at(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = ROLLING_UPDATE
        strategy.setdefault("rollingUpdate", {})
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == ROLLING_UPDATE and isinstance(rolling, dict):
        rolling.setdefault("partition", 0)
    retention = dict_at(spec, "persistentVolumeClaimRetentionPolicy")
    retention.setdefault("whenDeleted", RETAIN)
    retention.setdefault("whenScaled", RETAIN)
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    templates.default_template(spec.get("template"))
    for claim in spec.get("volumeClaimTemplates") or []:
        # SetDefaults_PersistentVolumeClaim and ..._PersistentVolumeClaimSpec.
        podspec.default_claim_spec(dict_at(claim, "spec"))
        dict_at(claim, "status").setdefault("phase", "Pending")


def default_and_print_stateful_set(obj: Obj) -> None:
    """The defaults, then each claim template printed as apps/v1's conversion prints it: a v1
    PersistentVolumeClaim, its TypeMeta first, whatever TypeMeta it was sent with (protobuf keeps none)."""
    default_stateful_set(obj)
    shaped.retype(STATEFUL_SET_SCHEMA, obj)
    claims = (obj.get("spec") or {}).get("volumeClaimTemplates") or []
    for index, claim in enumerate(claims):
        claims[index] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}


def _stateful_set_strategy_errors(strategy: Obj) -> list[FieldError]:
    kind, rolling = strategy.get("type", ""), strategy.get("rollingUpdate")
    at = "spec.updateStrategy"
    if not kind:
        return [FieldError.required(at)]
    if kind == ON_DELETE:
        if rolling is not None:
            return [FieldError.invalid(f"{at}.rollingUpdate", rolling,
                                       f"only allowed for updateStrategy '{ROLLING_UPDATE}'")]
        return []
    if kind == ROLLING_UPDATE:
        if not isinstance(rolling, dict):
            return []
        errs = nonnegative(rolling.get("partition", 0), f"{at}.rollingUpdate.partition")
        unavailable = rolling.get("maxUnavailable")
        if unavailable is not None:
            path = f"{at}.rollingUpdate.maxUnavailable"
            errs += _positive_int_or_percent(unavailable, path)
            if _int_or_percent(unavailable) == 0:
                errs.append(FieldError.invalid(path, unavailable, "cannot be 0"))
            errs += _not_over_100_percent(unavailable, path)
        return errs
    return [FieldError.invalid(at, strategy, f"must be '{ROLLING_UPDATE}' or '{ON_DELETE}'")]


def _stateful_set_spec_errors(spec: Obj) -> list[FieldError]:
    """ValidateStatefulSetSpec: the pod template is checked for its labels and annotations only, as upstream."""
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy", "")
    if not policy:
        errs.append(FieldError.required("spec.podManagementPolicy"))
    elif policy not in (ORDERED_READY, PARALLEL):
        errs.append(FieldError.invalid("spec.podManagementPolicy", policy,
                                       f"must be '{ORDERED_READY}' or '{PARALLEL}'"))
    errs += _stateful_set_strategy_errors(spec.get("updateStrategy") or {})
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for field in ("whenDeleted", "whenScaled"):
            value = retention.get(field, "")
            if value not in (RETAIN, DELETE):
                errs.append(FieldError.not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{field}", value,
                                                     [RETAIN, DELETE]))
    errs += nonnegative(spec.get("replicas"), "spec.replicas")
    errs += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += nonnegative(get(spec, "ordinals", "start"), "spec.ordinals.start")
    errs += selector_errors(spec.get("selector"), "spec.selector", empty="empty selector is invalid for statefulset")
    selector = templates.as_selector(spec.get("selector"))
    template = spec.get("template")
    if selector is None:
        errs.append(FieldError.invalid("spec.selector", names.go_label_selector(spec.get("selector")), ""))
    else:
        errs += templates.selects_template(selector, template, "spec.template")
        errs += templates.template_meta_errors(template, "spec.template")
    return errs + templates.always_restarting(template, "spec.template", "StatefulSet")


def validate_stateful_set(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateStatefulSet; on update only replicas, ordinals, template, updateStrategy, the claim retention
    policy and minReadySeconds may change (selector, serviceName, volumeClaimTemplates, ... may not)."""
    spec = obj.get("spec") or {}
    errs = _stateful_set_spec_errors(spec)
    if old is not None:
        old_spec = old.get("spec") or {}
        rest = {k: v for k, v in spec.items() if k not in STATEFUL_SET_MUTABLE}
        old_rest = {k: v for k, v in old_spec.items() if k not in STATEFUL_SET_MUTABLE}
        if not semantically_equal(rest, old_rest):
            errs.append(FieldError.forbidden("spec", STATEFUL_SET_SPEC_FORBIDDEN))
    return errs


# -- DaemonSet -----------------------------------------------------------------------------------------------------


def _template_generation(obj: Obj | None) -> int:
    value = (meta.meta(obj).get("annotations") or {}).get(TEMPLATE_GENERATION) if obj is not None else None
    return int(value) if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) else 0


def default_daemon_set(obj: Obj) -> None:
    """SetDefaults_DaemonSet and the template's defaults. The template generation annotation is there from the
    start, as apps/v1's conversion prints it (0 when the body has none): the request's manager owns it, as in
    kube; prepare_daemon_set gives it its value."""
    meta.meta(obj).setdefault("annotations", {}).setdefault(TEMPLATE_GENERATION, "0")
    spec = dict_at(obj, "spec")
    strategy = dict_at(spec, "updateStrategy")
    strategy.setdefault("type", ROLLING_UPDATE)
    if strategy["type"] == ROLLING_UPDATE:
        rolling = dict_at(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    templates.default_template(spec.get("template"))


def prepare_daemon_set(obj: Obj, old: Obj | None) -> None:
    """daemonSetStrategy.PrepareForCreate/ForUpdate: a new object's status; the template generation (an
    annotation in apps/v1) is 1 on create and rises with each change of the template."""
    if old is None:
        generation = max(_template_generation(obj), 1)
        obj["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                         "numberReady": 0}
    else:
        generation = _template_generation(old)
        if not semantically_equal(get(obj, "spec", "template"), get(old, "spec", "template")):
            generation += 1
    annotations = {**(meta.meta(obj).get("annotations") or {}), TEMPLATE_GENERATION: str(generation)}
    meta.meta(obj)["annotations"] = dict(sorted(annotations.items()))  # Go prints a map's keys sorted


def _daemon_set_strategy_errors(strategy: Obj) -> list[FieldError]:
    kind, rolling, at = strategy.get("type", ""), strategy.get("rollingUpdate"), "spec.updateStrategy"
    if kind == ON_DELETE:
        return []
    if kind == ROLLING_UPDATE:
        if not isinstance(rolling, dict):
            return [FieldError.required(f"{at}.rollingUpdate")]
        at += ".rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        errs = (_positive_int_or_percent(unavailable, f"{at}.maxUnavailable")
                + _positive_int_or_percent(surge, f"{at}.maxSurge")
                + _not_over_100_percent(unavailable, f"{at}.maxUnavailable")
                + _not_over_100_percent(surge, f"{at}.maxSurge"))
        has_unavailable, has_surge = _int_or_percent(unavailable) != 0, _int_or_percent(surge) != 0
        if has_unavailable and has_surge:
            errs.append(FieldError.invalid(f"{at}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"))
        elif not has_unavailable and not has_surge:
            errs.append(FieldError.required(f"{at}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
        return errs
    # the internal struct as %#v prints it (a set rollingUpdate is a pointer, its address shown as a placeholder)
    pointer = "(0xc000000000)" if rolling is not None else "(nil)"
    shown = GoValue(f"apps.DaemonSetUpdateStrategy{{Type:{names.go_quote(str(kind))}, "
                    f"RollingUpdate:(*apps.RollingUpdateDaemonSet){pointer}}}")
    return [FieldError.not_supported(at, shown, [ROLLING_UPDATE, ON_DELETE])]


def _daemon_set_spec_errors(spec: Obj) -> list[FieldError]:
    """ValidateDaemonSetSpec: an absent selector is not itself an error, but selects no template."""
    selector_value = spec.get("selector")
    errs = selector_errors(selector_value, "spec.selector", empty=None, required=False)
    selector = templates.as_selector(selector_value)
    template = spec.get("template")
    if selector is not None:
        template_labels = get(template, "metadata", "labels")
        if not selector.matches(template_labels if isinstance(template_labels, dict) else {}):
            errs.append(FieldError.invalid("spec.template.metadata.labels", names.go_string_map(template_labels),
                                           templates.SELECTOR_MISMATCH))
    if isinstance(selector_value, dict) and not selector_value.get("matchLabels") and not selector_value.get(
            "matchExpressions"):
        errs.append(FieldError.invalid("spec.selector", names.go_label_selector(selector_value),
                                       "empty selector is invalid for daemonset"))
    errs += templates.pod_template_errors(template, "spec.template")
    errs += templates.always_restarting(template, "spec.template", "DaemonSet")
    errs += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _daemon_set_strategy_errors(spec.get("updateStrategy") or {})
    return errs + nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")


def validate_daemon_set(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateDaemonSet; on update the spec is validated twice (causes repeat, as upstream) and the selector is
    immutable."""
    errs = _daemon_set_spec_errors(obj.get("spec") or {})
    if old is not None:
        errs = errs + errs + _selector_unchanged(obj, old)
    return errs


# -- ControllerRevision --------------------------------------------------------------------------------------------


def validate_controller_revision(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateControllerRevision(Update): data is mandatory, revision >= 0, and data never changes."""
    errs: list[FieldError] = []
    if obj.get("data") is None:
        errs.append(FieldError.required("data", "data is mandatory"))
    errs += nonnegative(obj.get("revision"), "revision")
    if old is not None:
        errs = errs + immutable(obj.get("data"), old.get("data"), "data")
    return errs


def stateful_set_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """statefulSetStrategy.WarningsOnCreate/OnUpdate: the template's warnings (on update only when the
    generation rose) and the claim templates' fractional storage, every time; kube words the claim templates'
    paths differently on create (spec.volumeClaimTemplates[0].resources...) and on update
    (spec.volumeClaimTemplates[0].Spec.resources...)."""
    spec = obj.get("spec") or {}
    out = [] if old is not None and not podwarnings.generation_changed(obj, old) else \
        podwarnings.template_warnings(spec.get("template"), "spec.template")
    for i, claim in enumerate(spec.get("volumeClaimTemplates") or []):
        at = f"spec.volumeClaimTemplates[{i}]" + ("" if old is None else ".Spec")
        out += podwarnings.claim_spec_warnings(claim.get("spec") if isinstance(claim, dict) else None, at)
    return out


def daemon_set_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """daemonSetStrategy.WarningsOnCreate/OnUpdate: the template's warnings, on update only when the template
    generation rose (the template changed)."""
    if old is not None and _template_generation(obj) == _template_generation(old):
        return []
    return podwarnings.template_warnings(get(obj, "spec", "template"), "spec.template")


def _new_status(status: Obj) -> templates.Prepare:
    """PrepareForCreate of kinds whose new objects start from a fixed status."""

    def prepare(obj: Obj, old: Obj | None) -> None:
        if old is None:
            obj["status"] = dict(status)

    return prepare


DEPLOYMENT_SCHEMA = ProtoSchema(apps_pb2.Deployment)
REPLICA_SET_SCHEMA = ProtoSchema(apps_pb2.ReplicaSet)
STATEFUL_SET_SCHEMA = ProtoSchema(apps_pb2.StatefulSet)
DAEMON_SET_SCHEMA = ProtoSchema(apps_pb2.DaemonSet)

DEPLOYMENTS = Resource(
    group="apps", version="v1", resource="deployments", kind="Deployment", singular="deployment", namespaced=True,
    schema=DEPLOYMENT_SCHEMA, short_names=("deploy",), categories=("all",),
    subresources=(_status("Deployment", ("labels",)),
                  scale.subresource(ScaleRule(missing=("apps", "deployments/scale")))),
    strategy=Declared(
        tracks_generation=True, defaults=templates.retyped(DEPLOYMENT_SCHEMA, default_deployment),
        prepare=prepare_deployment, validation=validate_deployment, warnings=podwarnings.workload_warnings,
    ),
)
REPLICA_SETS = Resource(
    group="apps", version="v1", resource="replicasets", kind="ReplicaSet", singular="replicaset", namespaced=True,
    schema=REPLICA_SET_SCHEMA, short_names=("rs",), categories=("all",),
    subresources=(_status("ReplicaSet"), scale.subresource(ScaleRule(missing=("apps", "replicasets/scale")))),
    strategy=Declared(
        tracks_generation=True, defaults=templates.retyped(REPLICA_SET_SCHEMA, default_replica_set),
        prepare=_new_status({"replicas": 0}), validation=validate_replica_set, warnings=podwarnings.workload_warnings,
    ),
)
STATEFUL_SETS = Resource(
    group="apps", version="v1", resource="statefulsets", kind="StatefulSet", singular="statefulset", namespaced=True,
    schema=STATEFUL_SET_SCHEMA, short_names=("sts",), categories=("all",),
    subresources=(_status("StatefulSet"), scale.subresource(ScaleRule())),
    strategy=Declared(
        tracks_generation=True, name_rule=names.name_is_dns_label,  # its name becomes the pods' hostnames
        defaults=default_and_print_stateful_set,
        prepare=_new_status({"replicas": 0, "availableReplicas": 0}), validation=validate_stateful_set,
        warnings=stateful_set_warnings,
    ),
)
DAEMON_SETS = Resource(
    group="apps", version="v1", resource="daemonsets", kind="DaemonSet", singular="daemonset", namespaced=True,
    schema=DAEMON_SET_SCHEMA, short_names=("ds",), categories=("all",),
    subresources=(_status("DaemonSet"),),
    strategy=Declared(
        tracks_generation=True, defaults=templates.retyped(DAEMON_SET_SCHEMA, default_daemon_set),
        prepare=prepare_daemon_set, validation=validate_daemon_set, warnings=daemon_set_warnings,
    ),
)
CONTROLLER_REVISIONS = Resource(
    group="apps", version="v1", resource="controllerrevisions", kind="ControllerRevision",
    singular="controllerrevision", namespaced=True, schema=ProtoSchema(apps_pb2.ControllerRevision),
    strategy=Declared(validation=validate_controller_revision),
)

KINDS = (DEPLOYMENTS, REPLICA_SETS, STATEFUL_SETS, DAEMON_SETS, CONTROLLER_REVISIONS)
