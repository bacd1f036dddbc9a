"""admissionregistration.k8s.io v1beta1 and v1alpha1 ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding,
stored and validated as kube-apiserver 1.28 does (pkg/apis/admissionregistration/v1beta1/defaults.go,
pkg/apis/admissionregistration/validation, pkg/registry/admissionregistration/validatingadmissionpolicy*).

Both versions have the same fields in 1.28, so they share one storage (keys name no version) and convert by
changing apiVersion alone. They are served only when enabled (the ValidatingAdmissionPolicy feature gate and
`--runtime-config admissionregistration.k8s.io/v1beta1=true` or `/v1alpha1=true`): `served` picks them.

Defaults: a policy's failurePolicy Fail; every MatchResources' matchPolicy Equivalent and empty namespace and
object selectors; every rule's scope "*"; a paramRef's parameterNotFoundAction Deny. A policy tracks its
generation and has /status (observedGeneration and typeChecking, written by server/admission/policies); its
CEL expressions are compiled when written, and one that does not compile is refused with kube's text:

    spec.validations[0].expression: Invalid value: "object.x >": compilation failed: ERROR: <input>:1:11: ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from capstan.api.admissionregistration.v1alpha1 import admissionregistration_v1alpha1_pb2 as v1alpha1_pb2
from capstan.api.admissionregistration.v1beta1 import admissionregistration_v1beta1_pb2 as v1beta1_pb2
from server.kinds.admissionregistration import GROUP, _go_slice, _rule_errors
from server.kinds.flowcontrol import empty_status
from server.kinds.templates import retyped
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _text
from server.registry.printing.columns import AGE, NAME
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Column, Declared

FEATURE_GATE = "ValidatingAdmissionPolicy"
VERSIONS = ("v1beta1", "v1alpha1")  # discovery's order: v1beta1 preferred
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
ACTIONS = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS = ("Deny", "Allow")
MAX_MATCH_CONDITIONS = 64
MAX_AUDIT_ANNOTATIONS = 20
MAX_VALUE_EXPRESSION = 5 * 1024
# The names every policy expression may read; `params` only when the policy has a paramKind, `variables` beside.
VARIABLES = ("object", "oldObject", "request", "namespaceObject", "authorizer", "variables")


# -- defaults ------------------------------------------------------------------------------------------------------


def _default_match(match: Obj) -> None:
    """SetDefaults_MatchResources, and SetDefaults_Rule under each rule."""
    match.setdefault("matchPolicy", "Equivalent")
    for field in ("namespaceSelector", "objectSelector"):
        if not isinstance(match.get(field), dict):
            match[field] = {}
    for field in ("resourceRules", "excludeResourceRules"):
        for rule in _list(match.get(field)):
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def default_policy(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("failurePolicy", "Fail")
    if isinstance(spec.get("matchConstraints"), dict):
        _default_match(spec["matchConstraints"])


def default_binding(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if isinstance(spec.get("matchResources"), dict):
        _default_match(spec["matchResources"])
    if isinstance(spec.get("paramRef"), dict):
        spec["paramRef"].setdefault("parameterNotFoundAction", "Deny")


# -- CEL -----------------------------------------------------------------------------------------------------------


def compile_error(text: str, declared: Iterable[str]) -> str:
    """"" when `text` compiles with the `declared` variables, else cel-go's text of what is wrong (syntax, or
    a reference to an undeclared name)."""
    from server.machinery.crdschema.cel import parse
    from server.machinery.crdschema.cel.rules import engine_compile

    program, problem = engine_compile(text)
    if program is None:
        return problem
    known = frozenset(declared)
    for name, pos in _free_idents(parse.parse(text), frozenset()):
        if name not in known and name not in _GLOBALS:
            line_start = text.rfind("\n", 0, pos) + 1
            line_end = text.find("\n", pos)
            line = text[line_start:line_end if line_end >= 0 else len(text)]
            column = pos - line_start
            return (f"ERROR: <input>:{text.count(chr(10), 0, pos) + 1}:{column + 1}: undeclared reference to "
                    f"'{name}' (in container '')\n | {line}\n | {'.' * column}^")
    return ""


_GLOBALS = frozenset(("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type",
                      "dyn", "true", "false", "null"))


def _free_idents(node: Any, bound: frozenset[str]) -> Iterable[tuple[str, int]]:
    from server.machinery.crdschema.cel import parse

    if isinstance(node, parse.Ident):
        if node.name not in bound:
            yield node.name, node.pos
    elif isinstance(node, parse.Select):
        yield from _free_idents(node.operand, bound)
    elif isinstance(node, parse.Call):
        if node.target is not None:
            yield from _free_idents(node.target, bound)
        for arg in node.args:
            yield from _free_idents(arg, bound)
    elif isinstance(node, parse.Comprehension):
        yield from _free_idents(node.range, bound)
        for arg in node.args:
            yield from _free_idents(arg, bound | {node.var})
    elif isinstance(node, parse.ListExpr):
        for item in node.items:
            yield from _free_idents(item, bound)
    elif isinstance(node, parse.MapExpr):
        for key, value in node.entries:
            yield from _free_idents(key, bound)
            yield from _free_idents(value, bound)
    else:
        for value in getattr(node, "__dict__", {}).values():
            if isinstance(value, parse.Node):
                yield from _free_idents(value, bound)


def declared(spec: Obj, *, match_condition: bool = False) -> tuple[str, ...]:
    """The variables a policy's expressions may name (kube's composition environment)."""
    out = VARIABLES if not match_condition else tuple(v for v in VARIABLES if v != "variables")
    return (*out, "params") if isinstance(spec.get("paramKind"), dict) else out


def _expression_errors(text: str, path: str, names_: Iterable[str], prefix: str = "compilation failed: ") -> list[
        FieldError]:
    problem = compile_error(text, names_)
    return [FieldError.invalid(path, text, prefix + problem)] if problem else []


# -- validation ----------------------------------------------------------------------------------------------------


def _param_kind_errors(kind: Obj, path: str) -> list[FieldError]:
    """validateParamKind."""
    errs: list[FieldError] = []
    api_version = _text(kind.get("apiVersion"))
    if not api_version:
        errs.append(FieldError.required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        errs.append(FieldError.invalid(f"{path}.apiVersion", api_version,
                                       f"unexpected GroupVersion string: {api_version}"))
    else:
        group, _, version = api_version.rpartition("/")
        if group:
            problems = names.is_dns1123_subdomain(group)
            if problems:
                errs.append(FieldError.invalid(f"{path}.apiVersion", group, ",".join(problems)))
        if not version:
            errs.append(FieldError.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        else:
            problems = names.is_dns1035_label(version)
            if problems:
                errs.append(FieldError.invalid(f"{path}.apiVersion", version, ",".join(problems)))
    kind_name = _text(kind.get("kind"))
    if not kind_name:
        errs.append(FieldError.required(f"{path}.kind"))
    else:
        problems = names.is_dns1035_label(kind_name.lower())
        if problems:
            errs.append(FieldError.invalid(f"{path}.kind", kind_name,
                                           "may have mixed case, but should otherwise match: " + ",".join(problems)))
    return errs


def _named_rule_errors(rule: Obj, path: str) -> list[FieldError]:
    """validateNamedRuleWithOperations."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, name in enumerate(_list(rule.get("resourceNames"))):
        name = _text(name)
        for problem in names.validate_path_segment_name(name, False):
            errs.append(FieldError.invalid(f"{path}.resourceNames[{i}]", name, problem))
        if name in seen:
            errs.append(FieldError.duplicate(f"{path}.resourceNames[{i}]", name))
        seen.add(name)
    return errs + _rule_errors(rule, path)


def _match_errors(match: Any, path: str) -> list[FieldError]:
    """validateMatchResources."""
    if not isinstance(match, dict):
        return []
    errs: list[FieldError] = []
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(FieldError.required(f"{path}.matchPolicy"))
    elif policy not in MATCH_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for field in ("namespaceSelector", "objectSelector"):
        if isinstance(match.get(field), dict):
            errs += labels.validate_label_selector(match[field], f"{path}.{field}")
    for field in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(_list(match.get(field))):
            errs += _named_rule_errors(_dict(rule), f"{path}.{field}[{i}]")
    return errs


def _match_conditions_errors(conditions: list[Any], path: str, names_: tuple[str, ...]) -> list[FieldError]:
    """validateMatchConditions."""
    errs: list[FieldError] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        errs.append(FieldError(names.ErrorType.TOO_MANY, path, len(conditions),
                               f"must have at most {MAX_MATCH_CONDITIONS} items"))
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        condition = _dict(condition)
        cpath = f"{path}[{i}]"
        name = _text(condition.get("name"))
        if not name:
            errs.append(FieldError.required(f"{cpath}.name"))
        else:
            errs += [FieldError.invalid(f"{cpath}.name", name, m) for m in names.is_qualified_name(name)]
            if name in seen:
                errs.append(FieldError.duplicate(f"{cpath}.name", name))
            seen.add(name)
        expression = _text(condition.get("expression"))
        if not expression:
            errs.append(FieldError.required(f"{cpath}.expression"))
        else:
            errs += _expression_errors(expression, f"{cpath}.expression", names_)
    return errs


def _validation_errors(validation: Obj, path: str, names_: tuple[str, ...]) -> list[FieldError]:
    """validateValidation."""
    errs: list[FieldError] = []
    expression = _text(validation.get("expression"))
    if not expression.strip():
        errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
    else:
        errs += _expression_errors(expression, f"{path}.expression", names_)
    message_expression = _text(validation.get("messageExpression"))
    if message_expression and not message_expression.strip():
        errs.append(FieldError.invalid(f"{path}.messageExpression", message_expression,
                                       "must be non-empty if specified"))
    elif message_expression.strip():
        errs += _expression_errors(message_expression, f"{path}.messageExpression",
                                   tuple(n for n in names_ if n != "authorizer"))
    message = _text(validation.get("message"))
    if message and not message.strip():
        errs.append(FieldError.invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif "\n" in message.strip():
        errs.append(FieldError.invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(FieldError.not_supported(f"{path}.reason", reason, REASONS))
    return errs


def _variable_errors(variable: Obj, path: str, names_: tuple[str, ...]) -> list[FieldError]:
    """validateVariable."""
    errs: list[FieldError] = []
    name = _text(variable.get("name"))
    if not name.strip():
        errs.append(FieldError.required(f"{path}.name", "name is not specified"))
    elif not _is_cel_identifier(name):
        errs.append(FieldError.invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
    expression = _text(variable.get("expression"))
    if not expression.strip():
        errs.append(FieldError.required(f"{path}.expression", "expression is not specified"))
    else:
        errs += _expression_errors(expression, f"{path}.expression", names_)
    return errs


def _is_cel_identifier(name: str) -> bool:
    return re.fullmatch(r"[_a-zA-Z][_a-zA-Z0-9]*", name) is not None and name not in _RESERVED


_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                       "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void",
                       "while"))


def _audit_annotation_errors(policy_name: str, annotation: Obj, path: str, names_: tuple[str, ...]) -> list[
        FieldError]:
    """validateAuditAnnotation."""
    errs: list[FieldError] = []
    key = _text(annotation.get("key"))
    if policy_name:
        qualified = f"{policy_name}/{key}"
        errs += [FieldError.invalid(f"{path}.key", qualified, m) for m in names.is_qualified_name(qualified)]
    else:
        errs.append(FieldError.invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value = _text(annotation.get("valueExpression")).strip()
    if not value:
        errs.append(FieldError.required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(value) > MAX_VALUE_EXPRESSION:
        errs.append(FieldError.required(f"{path}.valueExpression",
                                        f"must not exceed {MAX_VALUE_EXPRESSION} bytes in length"))
    else:
        errs += _expression_errors(_text(annotation.get("valueExpression")), f"{path}.valueExpression", names_)
    return errs


def validate_policy(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicy's spec part (ObjectMeta is the verbs'); an update whose spec is
    unchanged is not compiled again (kube's ratcheting of expressions an older server accepted)."""
    spec = _dict(obj.get("spec"))
    if old is not None and _dict(old.get("spec")) == spec:
        return []
    errs: list[FieldError] = []
    failure_policy = spec.get("failurePolicy")
    if failure_policy is None:
        errs.append(FieldError.required("spec.failurePolicy"))
    elif failure_policy not in FAILURE_POLICIES:
        errs.append(FieldError.not_supported("spec.failurePolicy", failure_policy, FAILURE_POLICIES))
    if isinstance(spec.get("paramKind"), dict):
        errs += _param_kind_errors(spec["paramKind"], "spec.paramKind")
    match = spec.get("matchConstraints")
    if not isinstance(match, dict):
        errs.append(FieldError.required("spec.matchConstraints"))
    else:
        errs += _match_errors(match, "spec.matchConstraints")
        if not _list(match.get("resourceRules")):
            errs.append(FieldError.required("spec.matchConstraints.resourceRules"))
    errs += _match_conditions_errors(_list(spec.get("matchConditions")), "spec.matchConditions",
                                     declared(spec, match_condition=True))
    everything = declared(spec)
    for i, variable in enumerate(_list(spec.get("variables"))):
        errs += _variable_errors(_dict(variable), f"spec.variables[{i}]", everything)
    validations, annotations = _list(spec.get("validations")), _list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        errs += [FieldError.required("spec.validations", detail), FieldError.required("spec.auditAnnotations", detail)]
    else:
        for i, validation in enumerate(validations):
            errs += _validation_errors(_dict(validation), f"spec.validations[{i}]", everything)
        if len(annotations) > MAX_AUDIT_ANNOTATIONS:
            errs.append(FieldError(names.ErrorType.INVALID, "spec.auditAnnotations", names.GoValue(
                f"{len(annotations)} items"), f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"))
        keys: set[str] = set()
        name = _text(_dict(obj.get("metadata")).get("name"))
        for i, annotation in enumerate(annotations):
            annotation = _dict(annotation)
            errs += _audit_annotation_errors(name, annotation, f"spec.auditAnnotations[{i}]", everything)
            key = _text(annotation.get("key"))
            if key in keys:
                errs.append(FieldError.duplicate(f"spec.auditAnnotations[{i}].key", key))
            keys.add(key)
    return errs


def _param_ref_errors(ref: Any, path: str) -> list[FieldError]:
    """validateParamRef."""
    if not isinstance(ref, dict):
        return []
    errs: list[FieldError] = []
    name, namespace = _text(ref.get("name")), _text(ref.get("namespace"))
    selector = ref.get("selector")
    if name:
        errs += [FieldError.invalid(f"{path}.name", name, m) for m in names.validate_path_segment_name(name, False)]
    if namespace:
        errs += [FieldError.invalid(f"{path}.namespace", namespace, m)
                 for m in names.validate_path_segment_name(namespace, False)]
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(FieldError.required(f"{path}.parameterNotFoundAction"))
    elif action not in NOT_FOUND_ACTIONS:
        errs.append(FieldError.not_supported(f"{path}.parameterNotFoundAction", action, NOT_FOUND_ACTIONS))
    if isinstance(selector, dict):
        errs += labels.validate_label_selector(selector, f"{path}.selector")
        if name:
            errs.append(FieldError.forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if not name and not isinstance(selector, dict):
        errs.append(FieldError.required(path, "one of name or selector must be specified"))
    return errs


def validate_binding(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicyBinding's spec part (kube's field path `matchResouces` included)."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    policy_name = _text(spec.get("policyName"))
    if not policy_name:
        errs.append(FieldError.required("spec.policyName"))
    else:
        errs += [FieldError.invalid("spec.policyName", policy_name, m)
                 for m in names.name_is_dns_subdomain(policy_name, False)]
    errs += _param_ref_errors(spec.get("paramRef"), "spec.paramRef")
    errs += _match_errors(spec.get("matchResources"), "spec.matchResouces")
    actions = _list(spec.get("validationActions"))
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in ACTIONS:
            errs.append(FieldError.not_supported(f"spec.validationActions[{i}]", action, ACTIONS))
        if action in seen:
            errs.append(FieldError.duplicate(f"spec.validationActions[{i}]", action))
        seen.add(_text(action))
    if {"Deny", "Warn"} <= seen:
        errs.append(FieldError.invalid(
            "spec.validationActions", _go_slice(actions, "admissionregistration.ValidationAction"),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API "
            "response and headers serves no purpose)"))
    if not seen:
        errs.append(FieldError.required("spec.validationActions", "at least one validation action is required"))
    return errs


def validate_status(obj: Obj, old: Obj) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicyStatusUpdate: conditions as metav1 validates them (types required)."""
    errs: list[FieldError] = []
    for i, condition in enumerate(_list(_dict(obj.get("status")).get("conditions"))):
        if not _text(_dict(condition).get("type")):
            errs.append(FieldError.required(f"status.conditions[{i}].type"))
    return errs


# -- Table columns (printValidatingAdmissionPolicy, printValidatingAdmissionPolicyBinding) ----------------------


def _param_kind(obj: Obj) -> str:
    kind = _dict(obj.get("spec")).get("paramKind")
    if not isinstance(kind, dict):
        return "<unset>"
    return f"{_text(kind.get('apiVersion'))}/{_text(kind.get('kind'))}"


def _param_ref(obj: Obj) -> str:
    ref = _dict(obj.get("spec")).get("paramRef")
    if not isinstance(ref, dict):
        return "<unset>"
    name, namespace = _text(ref.get("name")), _text(ref.get("namespace"))
    if name:
        return f"{namespace}/{name}" if namespace else f"*/{name}"
    if isinstance(ref.get("selector"), dict):
        return _go_selector(ref["selector"])
    return "<unset>"


def _go_selector(selector: Obj) -> str:
    """A *metav1.LabelSelector as its generated String() prints it."""
    match_labels = _dict(selector.get("matchLabels"))
    pairs = "".join(f"{k}: {match_labels[k]}," for k in sorted(match_labels))
    expressions = "".join(
        f"{{{_text(_dict(e).get('key'))} {_text(_dict(e).get('operator'))} "
        f"[{' '.join(_text(v) for v in _list(_dict(e).get('values')))}]}},"
        for e in _list(selector.get("matchExpressions")))
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}")


POLICY_COLUMNS = (
    NAME,
    Column("Validations", "integer", "Validations indicates the number of validation rules defined in this "
           "configuration", lambda o: len(_list(_dict(o.get("spec")).get("validations")))),
    Column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy",
           _param_kind),
    AGE,
)
BINDING_COLUMNS = (
    NAME,
    Column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to",
           lambda o: _text(_dict(o.get("spec")).get("policyName"))),
    Column("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param",
           _param_ref),
    AGE,
)


def _resources(version: str, pb: Any) -> tuple[Resource, Resource]:
    policy_schema = ProtoSchema(pb.ValidatingAdmissionPolicy)
    binding_schema = ProtoSchema(pb.ValidatingAdmissionPolicyBinding)
    policies = Resource(
        group=GROUP, version=version, resource="validatingadmissionpolicies", kind="ValidatingAdmissionPolicy",
        singular="validatingadmissionpolicy", namespaced=False, schema=policy_schema,
        categories=("api-extensions",),
        subresources=(Subresource("status", "ValidatingAdmissionPolicy", ("get", "patch", "update"), ("status",),
                                  validate=validate_status),),
        strategy=Declared(tracks_generation=True, standard_finalizers=False, unconditional_update=False,
                          defaults=retyped(policy_schema, default_policy), prepare=empty_status,
                          validation=validate_policy, columns=POLICY_COLUMNS),
    )
    bindings = Resource(
        group=GROUP, version=version, resource="validatingadmissionpolicybindings",
        kind="ValidatingAdmissionPolicyBinding", singular="validatingadmissionpolicybinding", namespaced=False,
        schema=binding_schema, categories=("api-extensions",),
        strategy=Declared(tracks_generation=True, standard_finalizers=False, unconditional_update=False,
                          defaults=retyped(binding_schema, default_binding), validation=validate_binding,
                          columns=BINDING_COLUMNS),
    )
    return policies, bindings


V1BETA1 = _resources("v1beta1", v1beta1_pb2)
V1ALPHA1 = _resources("v1alpha1", v1alpha1_pb2)
KINDS_BY_VERSION = {"v1beta1": V1BETA1, "v1alpha1": V1ALPHA1}


def served(group_versions: Iterable[str]) -> tuple[Resource, ...]:
    """The policy kinds of the enabled group versions ("admissionregistration.k8s.io/v1beta1", ...)."""
    on = set(group_versions)
    return tuple(r for v in VERSIONS if f"{GROUP}/{v}" in on for r in KINDS_BY_VERSION[v])

