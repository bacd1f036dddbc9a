"""rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding: stored and served with
kube-apiserver's defaults and validation (pkg/apis/rbac/v1/defaults.go, pkg/apis/rbac/validation), and
admitted only when they grant nothing the caller does not hold (server/auth/rbac/escalation.py). A binding's
roleRef never changes:

    roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"b"}: cannot
    change roleRef

(the value is the internal rbac.RoleRef, as field.ErrorBody prints a struct: %#v).
"""

from __future__ import annotations

from capstan.api.rbac.v1 import rbac_pb2
from server.auth.rbac import escalation
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.machinery.values import text_of as _text
from server.registry.resources import Resource
from server.registry.strategy import Declared

GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT, USER, GROUP_KIND = "ServiceAccount", "User", "Group"


def default_binding(obj: Obj) -> None:
    """SetDefaults_(Cluster)RoleBinding and SetDefaults_Subject: the rbac group where it is implied."""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = GROUP
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in (USER, GROUP_KIND):
            subject["apiGroup"] = GROUP


def _rule_errors(rule: Obj, path: str, *, namespaced: bool) -> list[FieldError]:
    """ValidatePolicyRule."""
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(FieldError.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs")
    if urls:
        if namespaced:
            errs.append(FieldError.invalid(f"{path}.nonResourceURLs", urls,
                                           "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(FieldError.invalid(f"{path}.nonResourceURLs", urls,
                                           "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(FieldError.required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(FieldError.required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def _rules_errors(obj: Obj, *, namespaced: bool) -> list[FieldError]:
    return [e for i, rule in enumerate(obj.get("rules") or [])
            for e in _rule_errors(rule if isinstance(rule, dict) else {}, f"rules[{i}]", namespaced=namespaced)]


def validate_role(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _rules_errors(obj, namespaced=True)


def validate_cluster_role(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateClusterRole: its rules, and an aggregationRule with at least one valid selector."""
    errs = _rules_errors(obj, namespaced=False)
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        selectors = aggregation.get("clusterRoleSelectors") or []
        if not selectors:
            errs.append(FieldError.required("aggregationRule.clusterRoleSelectors",
                                            "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            path = f"aggregationRule.clusterRoleSelectors[{i}]"
            errs += labels.validate_label_selector(selector, path)
            try:
                labels.from_label_selector(selector)
            except labels.SelectorError:
                errs.append(FieldError.invalid(path, selector, "invalid label selector."))
    return errs


def _subject_errors(subject: Obj, path: str, *, namespaced: bool) -> list[FieldError]:
    """ValidateRoleBindingSubject."""
    errs: list[FieldError] = []
    name, kind, group = _text(subject.get("name")), subject.get("kind", ""), _text(subject.get("apiGroup"))
    if not name:
        errs.append(FieldError.required(f"{path}.name"))
    if kind == SERVICE_ACCOUNT:
        if name:
            errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in names.name_is_dns_subdomain(name, False))
        if group:
            errs.append(FieldError.not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(FieldError.required(f"{path}.namespace"))
    elif kind in (USER, GROUP_KIND):
        if group != GROUP:
            errs.append(FieldError.not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        errs.append(FieldError.not_supported(f"{path}.kind", kind, [SERVICE_ACCOUNT, USER, GROUP_KIND]))
    return errs


def _binding_errors(obj: Obj, old: Obj | None, *, namespaced: bool) -> list[FieldError]:
    """ValidateRoleBinding / ValidateClusterRoleBinding, and on update: roleRef may not change."""
    role_ref = obj.get("roleRef") or {}
    errs: list[FieldError] = []
    api_group, kind, name = _text(role_ref.get("apiGroup")), _text(role_ref.get("kind")), _text(role_ref.get("name"))
    if api_group != GROUP:
        errs.append(FieldError.not_supported("roleRef.apiGroup", api_group, [GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if kind not in kinds:
        errs.append(FieldError.not_supported("roleRef.kind", kind, kinds))
    if not name:
        errs.append(FieldError.required("roleRef.name"))
    else:
        errs.extend(FieldError.invalid("roleRef.name", name, m) for m in names.validate_path_segment_name(name, False))
    for i, subject in enumerate(obj.get("subjects") or []):
        errs += _subject_errors(subject if isinstance(subject, dict) else {}, f"subjects[{i}]", namespaced=namespaced)
    if old is not None:
        old_ref = old.get("roleRef") or {}
        fields = ("apiGroup", "kind", "name")
        if any(_text(role_ref.get(f)) != _text(old_ref.get(f)) for f in fields):
            shown = GoValue(f"rbac.RoleRef{{APIGroup:{names.go_quote(str(api_group))}, "
                            f"Kind:{names.go_quote(str(kind))}, Name:{names.go_quote(str(name))}}}")
            errs.append(FieldError.invalid("roleRef", shown, "cannot change roleRef"))
    return errs


def validate_role_binding(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _binding_errors(obj, old, namespaced=True)


def validate_cluster_role_binding(obj: Obj, old: Obj | None) -> list[FieldError]:
    return _binding_errors(obj, old, namespaced=False)


ROLES = Resource(
    group=GROUP, version="v1", resource="roles", kind="Role", singular="role", namespaced=True,
    schema=ProtoSchema(rbac_pb2.Role), # ValidateRBACName
    strategy=Declared(
        name_rule=names.validate_path_segment_name, validation=validate_role, own_admission=escalation.admit_role,
    ),
)
CLUSTER_ROLES = Resource(
    group=GROUP, version="v1", resource="clusterroles", kind="ClusterRole", singular="clusterrole", namespaced=False,
    schema=ProtoSchema(rbac_pb2.ClusterRole),
    strategy=Declared(
        name_rule=names.validate_path_segment_name, validation=validate_cluster_role,
        own_admission=escalation.admit_cluster_role,
    ),
)
ROLE_BINDINGS = Resource(
    group=GROUP, version="v1", resource="rolebindings", kind="RoleBinding", singular="rolebinding", namespaced=True,
    schema=ProtoSchema(rbac_pb2.RoleBinding),
    strategy=Declared(
        name_rule=names.validate_path_segment_name, defaults=default_binding, validation=validate_role_binding,
        own_admission=escalation.admit_role_binding,
    ),
)
CLUSTER_ROLE_BINDINGS = Resource(
    group=GROUP, version="v1", resource="clusterrolebindings", kind="ClusterRoleBinding",
    singular="clusterrolebinding", namespaced=False, schema=ProtoSchema(rbac_pb2.ClusterRoleBinding),
    strategy=Declared(
        name_rule=names.validate_path_segment_name, defaults=default_binding,
        validation=validate_cluster_role_binding, own_admission=escalation.admit_cluster_role_binding,
    ),
)

KINDS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
