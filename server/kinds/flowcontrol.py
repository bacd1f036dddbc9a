"""flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema and PriorityLevelConfiguration: registry entries, defaults and
validation, as kube-apiserver 1.28's (pkg/apis/flowcontrol/v1beta3/defaults.go, pkg/apis/flowcontrol/validation,
pkg/registry/flowcontrol).

These objects are API Priority and Fairness' configuration. Capstan stores and serves them, and writes kube's
mandatory and suggested objects at start (server/startup/flowcontrol_bootstrap.py); its own load shedding
(server/machinery/limits/) does not read them. v1beta3 is the stored and preferred version; v1beta2 is served from the
same storage through a conversion (server/kinds/flowcontrol_v1beta2.py).

Both strategies drop status on create, keep it on update and count generations; their /status keeps the stored
metadata and spec (flowSchemaStatusStrategy.PrepareForUpdate copies ObjectMeta and Spec from the old object).
"""

from __future__ import annotations

from typing import Any

from capstan.api.flowcontrol.v1beta3 import flowcontrol_pb2
from server.kinds.templates import get
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

GROUP = "flowcontrol.apiserver.k8s.io"
VERSION = "v1beta3"
AUTO_UPDATE_ANNOTATION = "apf.kubernetes.io/autoupdate-spec"

DISTINGUISHER_METHODS = ("ByNamespace", "ByUser")
SUBJECT_KINDS = ("Group", "ServiceAccount", "User")
PRIORITY_LEVEL_TYPES = ("Exempt", "Limited")
LIMIT_RESPONSE_TYPES = ("Queue", "Reject")
MAX_MATCHING_PRECEDENCE = 10000
# pkg/apis/flowcontrol/validation: the verbs a ResourcePolicyRule may name besides "*".
SUPPORTED_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch")


# --- defaults (SetDefaults_*) ------------------------------------------------------------------------------------


def default_flow_schema(obj: Obj) -> None:
    """SetDefaults_FlowSchemaSpec: matchingPrecedence 0 is 1000."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def default_priority_level(obj: Obj) -> None:
    """SetDefaults_LimitedPriorityLevelConfiguration, SetDefaults_ExemptPriorityLevelConfiguration and
    SetDefaults_QueuingConfiguration."""
    spec = _dict(obj.get("spec"))
    limited = spec.get("limited")
    if isinstance(limited, dict):
        if not limited.get("nominalConcurrencyShares"):
            limited["nominalConcurrencyShares"] = 30
        limited.setdefault("lendablePercent", 0)
        queuing = _dict(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            for field, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(field):
                    queuing[field] = value
    exempt = spec.get("exempt")
    if isinstance(exempt, dict):
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)


# --- validation (pkg/apis/flowcontrol/validation) ----------------------------------------------------------------


def _subject_errors(subject: dict[str, Any], at: str) -> list[FieldError]:
    """ValidateFlowSchemaSubject: the member named by kind is set and named, and only it."""
    errs: list[FieldError] = []
    kind = subject.get("kind", "")
    members = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}
    for member_kind, member in members.items():
        value = subject.get(member)
        if member_kind == kind:
            if not isinstance(value, dict):
                errs.append(FieldError.required(f"{at}.{member}", f"{member} is required when subject kind is "
                                                                  f"'{kind}'"))
                continue
            if not value.get("name"):
                errs.append(FieldError.required(f"{at}.{member}.name", ""))
            if member == "serviceAccount" and not value.get("namespace"):
                errs.append(FieldError.required(f"{at}.{member}.namespace", ""))
        elif value is not None:
            errs.append(FieldError.forbidden(f"{at}.{member}", f"{member} is forbidden when subject kind is "
                                                               f"'{kind}'"))
    if kind not in SUBJECT_KINDS:
        errs.append(FieldError.not_supported(f"{at}.kind", kind, SUBJECT_KINDS))
    return errs


def _resource_rule_errors(rule: dict[str, Any], at: str) -> list[FieldError]:
    """ValidateFlowSchemaResourcePolicyRule."""
    errs: list[FieldError] = []
    for field, detail in (("verbs", "verbs must contain at least one value"),
                          ("apiGroups", "resource rules must supply at least one api group"),
                          ("resources", "resource rules must supply at least one resource")):
        if not _list(rule.get(field)):
            errs.append(FieldError.required(f"{at}.{field}", detail))
        elif len(rule[field]) > 1 and "*" in rule[field]:
            errs.append(FieldError.invalid(f"{at}.{field}", names.GoValue(_go_strings(rule[field])),
                                           f"if '*' is present, must not specify other {field}"))
    verbs = _list(rule.get("verbs"))
    if verbs and "*" not in verbs:
        for verb in verbs:
            if verb not in SUPPORTED_VERBS:
                errs.append(FieldError.not_supported(f"{at}.verbs", verb, SUPPORTED_VERBS))
    namespaces = _list(rule.get("namespaces"))
    if not namespaces and not rule.get("clusterScope"):
        errs.append(FieldError.required(f"{at}.namespaces", "resource rules that are not cluster scoped must "
                                                            "supply at least one namespace"))
    return errs


def _non_resource_rule_errors(rule: dict[str, Any], at: str) -> list[FieldError]:
    """ValidateFlowSchemaNonResourcePolicyRule."""
    errs: list[FieldError] = []
    for field, detail in (("verbs", "verbs must contain at least one value"),
                          ("nonResourceURLs", "nonResourceURLs must contain at least one value")):
        values = _list(rule.get(field))
        if not values:
            errs.append(FieldError.required(f"{at}.{field}", detail))
        elif len(values) > 1 and "*" in values:
            errs.append(FieldError.invalid(f"{at}.{field}", names.GoValue(_go_strings(values)),
                                           f"if '*' is present, must not specify other {field}"))
    return errs


def _go_strings(values: list[Any]) -> str:
    """A []string as %#v prints it."""
    return "[]string{" + ", ".join(names.go_quote(str(v)) for v in values) + "}"


def validate_flow_schema(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateFlowSchemaSpec (ValidateFlowSchemaUpdate adds nothing to it)."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    precedence = spec.get("matchingPrecedence", 0)
    if isinstance(precedence, int):
        if precedence <= 0:
            errs.append(FieldError.invalid("spec.matchingPrecedence", precedence, "must be a positive value"))
        if precedence > MAX_MATCHING_PRECEDENCE:
            errs.append(FieldError.invalid("spec.matchingPrecedence", precedence,
                                           f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type", "") not in DISTINGUISHER_METHODS:
        errs.append(FieldError.not_supported("spec.distinguisherMethod.type", method.get("type", ""),
                                             DISTINGUISHER_METHODS))
    level = get(spec, "priorityLevelConfiguration", "name") or ""
    if not level:
        errs.append(FieldError.required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    else:
        errs += [FieldError.invalid("spec.priorityLevelConfiguration.name", level, m)
                 for m in names.is_dns1123_subdomain(level)]
    for i, rule in enumerate(_list(spec.get("rules"))):
        at = f"spec.rules[{i}]"
        rule = _dict(rule)
        subjects = _list(rule.get("subjects"))
        if not subjects:
            errs.append(FieldError.required(f"{at}.subjects", "subjects must contain at least one value"))
        for j, subject in enumerate(subjects):
            errs += _subject_errors(_dict(subject), f"{at}.subjects[{j}]")
        resource_rules, non_resource_rules = _list(rule.get("resourceRules")), _list(rule.get("nonResourceRules"))
        if not resource_rules and not non_resource_rules:
            errs.append(FieldError.required(at, "at least one of resourceRules and nonResourceRules has to be "
                                                "non-empty"))
        for j, resource_rule in enumerate(resource_rules):
            errs += _resource_rule_errors(_dict(resource_rule), f"{at}.resourceRules[{j}]")
        for j, non_resource_rule in enumerate(non_resource_rules):
            errs += _non_resource_rule_errors(_dict(non_resource_rule), f"{at}.nonResourceRules[{j}]")
    return errs


def _percent_errors(value: object, path: str) -> list[FieldError]:
    if isinstance(value, int) and not 0 <= value <= 100:
        return [FieldError.invalid(path, value, "must be between 0 and 100, inclusive")]
    return []


def _queuing_errors(queuing: dict[str, Any], at: str) -> list[FieldError]:
    """ValidatePriorityLevelQueuingConfiguration."""
    errs: list[FieldError] = []
    for field in ("queueLengthLimit", "queues", "handSize"):
        value = queuing.get(field, 0)
        if isinstance(value, int) and value <= 0:
            errs.append(FieldError.invalid(f"{at}.{field}", value, "must be positive"))
    queues, hand_size = queuing.get("queues", 0), queuing.get("handSize", 0)
    if isinstance(queues, int) and isinstance(hand_size, int) and 0 < queues < hand_size:
        errs.append(FieldError.invalid(f"{at}.handSize", hand_size, f"should not be greater than queues ({queues})"))
    return errs


def _limited_errors(limited: dict[str, Any], at: str) -> list[FieldError]:
    """ValidateLimitedPriorityLevelConfiguration and ValidateLimitResponse."""
    errs: list[FieldError] = []
    shares = limited.get("nominalConcurrencyShares", 0)
    if isinstance(shares, int) and shares <= 0:
        errs.append(FieldError.invalid(f"{at}.nominalConcurrencyShares", shares, "must be positive"))
    errs += _percent_errors(limited.get("lendablePercent"), f"{at}.lendablePercent")
    borrowing = limited.get("borrowingLimitPercent")
    if isinstance(borrowing, int) and borrowing < 0:
        errs.append(FieldError.invalid(f"{at}.borrowingLimitPercent", borrowing,
                                       "if specified, must be a non-negative integer"))
    response = _dict(limited.get("limitResponse"))
    kind, queuing = response.get("type", ""), response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            errs.append(FieldError.forbidden(f"{at}.limitResponse.queuing",
                                             "must be nil if limited.limitResponse.type is not Limited"))
    elif kind == "Queue":
        if not isinstance(queuing, dict):
            errs.append(FieldError.required(f"{at}.limitResponse.queuing",
                                            "must not be empty if limited.limitResponse.type is Limited"))
        else:
            errs += _queuing_errors(queuing, f"{at}.limitResponse.queuing")
    else:
        errs.append(FieldError.not_supported(f"{at}.limitResponse.type", kind, LIMIT_RESPONSE_TYPES))
    return errs


def validate_priority_level(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidatePriorityLevelConfigurationSpec: the member the type names, and only it."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    kind = spec.get("type", "")
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if kind == "Exempt":
        if limited is not None:
            errs.append(FieldError.forbidden("spec.limited", "must be nil if the type is not Limited"))
        if isinstance(exempt, dict):
            shares = exempt.get("nominalConcurrencyShares")
            if isinstance(shares, int) and shares < 0:
                errs.append(FieldError.invalid("spec.exempt.nominalConcurrencyShares", shares,
                                               "must be a non-negative integer"))
            errs += _percent_errors(exempt.get("lendablePercent"), "spec.exempt.lendablePercent")
    elif kind == "Limited":
        if exempt is not None:
            errs.append(FieldError.forbidden("spec.exempt", "must be nil if the type is Limited"))
        if not isinstance(limited, dict):
            errs.append(FieldError.required("spec.limited", "must not be empty when type is Limited"))
        else:
            errs += _limited_errors(limited, "spec.limited")
    else:
        errs.append(FieldError.not_supported("spec.type", kind, PRIORITY_LEVEL_TYPES))
    return errs


def empty_status(obj: Obj, old: Obj | None) -> None:
    """PrepareForCreate: a new object's status is the empty struct (Go prints `"status": {}`)."""
    if old is None:
        obj["status"] = {}


def _status(kind: str) -> Subresource:
    # The status strategies keep the stored metadata and spec: metadata_reset None.
    return Subresource("status", kind, ("get", "patch", "update"), ("status",))


FLOW_SCHEMAS = Resource(
    group=GROUP, version=VERSION, resource="flowschemas", kind="FlowSchema", singular="flowschema",
    namespaced=False, schema=ProtoSchema(flowcontrol_pb2.FlowSchema),
    subresources=(_status("FlowSchema"),),
    strategy=Declared(
        tracks_generation=True, defaults=default_flow_schema, prepare=empty_status, validation=validate_flow_schema,
    ),
)

PRIORITY_LEVEL_CONFIGURATIONS = Resource(
    group=GROUP, version=VERSION, resource="prioritylevelconfigurations", kind="PriorityLevelConfiguration",
    singular="prioritylevelconfiguration", namespaced=False,
    schema=ProtoSchema(flowcontrol_pb2.PriorityLevelConfiguration),
    subresources=(_status("PriorityLevelConfiguration"),),
    strategy=Declared(
        tracks_generation=True, defaults=default_priority_level, prepare=empty_status,
        validation=validate_priority_level,
    ),
)

KINDS = (FLOW_SCHEMAS, PRIORITY_LEVEL_CONFIGURATIONS)
