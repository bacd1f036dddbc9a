"""admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and MutatingWebhookConfiguration, stored and
validated as kube-apiserver 1.28 does (pkg/apis/admissionregistration/v1/defaults.go,
pkg/apis/admissionregistration/validation, pkg/registry/admissionregistration/*/strategy.go).

Calling the webhooks is not done yet: a configuration is only stored. Each webhook gets kube's defaults:

    {"name": "a.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"], "clientConfig": {...}}
    -> failurePolicy Fail, matchPolicy Equivalent, namespaceSelector {}, objectSelector {}, timeoutSeconds 10
       (+ reinvocationPolicy Never for mutating webhooks), each rule's scope "*", a Service's port 443

sideEffects and admissionReviewVersions have no default in v1 and are required.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from capstan.api.admissionregistration.v1 import admissionregistration_pb2
from server.kinds.templates import retyped
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _text
from server.registry.resources import Resource
from server.registry.strategy import Declared

GROUP = "admissionregistration.k8s.io"
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SIDE_EFFECTS = ("None", "NoneOnDryRun")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
REVIEW_VERSIONS = ("v1", "v1beta1")


# -- defaults ------------------------------------------------------------------------------------------------------


def _default_webhook(hook: Obj, *, mutating: bool) -> None:
    """SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook, SetDefaults_Rule, SetDefaults_ServiceReference."""
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    if not isinstance(hook.get("namespaceSelector"), dict):
        hook["namespaceSelector"] = {}
    if not isinstance(hook.get("objectSelector"), dict):
        hook["objectSelector"] = {}
    hook.setdefault("timeoutSeconds", 10)
    if mutating:
        hook.setdefault("reinvocationPolicy", "Never")
    for rule in _list(hook.get("rules")):
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")
    service = _dict(hook.get("clientConfig")).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def _defaults(mutating: bool) -> Callable[[Obj], None]:
    def default(obj: Obj) -> None:
        for hook in _list(obj.get("webhooks")):
            if isinstance(hook, dict):
                _default_webhook(hook, mutating=mutating)

    return default


# -- validation ----------------------------------------------------------------------------------------------------


def _go_slice(values: list[Any], type_name: str = "string") -> GoValue:
    """A slice as field.Invalid prints it (%#v): []string{"*", "pods"}."""
    return GoValue(f"[]{type_name}{{{', '.join(names.go_quote(_text(v)) for v in values)}}}")


def _fully_qualified_name(name: str, path: str) -> list[FieldError]:
    """utilvalidation.IsFullyQualifiedName."""
    if not name:
        return [FieldError.required(path)]
    errs = names.is_dns1123_subdomain(name)
    if errs:
        return [FieldError.invalid(path, name, ",".join(errs))]
    if len(name.split(".")) < 3:
        return [FieldError.invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _resources_errors(resources: list[Any], path: str) -> list[FieldError]:
    """validateResources: subresources allowed, wildcards not overlapping."""
    errs: list[FieldError] = []
    if not resources:
        errs.append(FieldError.required(path))
    wildcard_sub: set[str] = set()  # x/*
    wildcard_res: set[str] = set()  # */x
    double = single = plain = False
    for i, res_sub in enumerate(resources):
        res_sub = _text(res_sub)
        if not res_sub:
            errs.append(FieldError.required(f"{path}[{i}]"))
            continue
        double = double or res_sub == "*/*"
        single = single or res_sub == "*"
        parts = res_sub.split("/", 1)
        if len(parts) == 1:
            plain = res_sub != "*"
            continue
        res, sub = parts
        if res in wildcard_sub:
            errs.append(
                FieldError.invalid(f"{path}[{i}]", res_sub, f"if '{res}/*' is present, must not specify {res_sub}")
            )
        if sub in wildcard_res:
            errs.append(
                FieldError.invalid(f"{path}[{i}]", res_sub, f"if '*/{sub}' is present, must not specify {res_sub}")
            )
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(
            FieldError.invalid(path, _go_slice(resources), "if '*/*' is present, must not specify other resources")
        )
    if single and plain:
        errs.append(
            FieldError.invalid(
                path, _go_slice(resources), "if '*' is present, must not specify other resources without subresources"
            )
        )
    return errs


def _rule_errors(rule: Obj, path: str) -> list[FieldError]:
    """validateRuleWithOperations, then validateRule."""
    errs: list[FieldError] = []
    operations = _list(rule.get("operations"))
    if not operations:
        errs.append(FieldError.required(f"{path}.operations"))
    if len(operations) > 1 and "*" in operations:
        errs.append(
            FieldError.invalid(
                f"{path}.operations",
                _go_slice(operations, "admissionregistration.OperationType"),
                "if '*' is present, must not specify other operations",
            )
        )
    for i, op in enumerate(operations):
        if op not in OPERATIONS:
            errs.append(FieldError.not_supported(f"{path}.operations[{i}]", op, OPERATIONS))
    groups, versions = _list(rule.get("apiGroups")), _list(rule.get("apiVersions"))
    if not groups:
        errs.append(FieldError.required(f"{path}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        errs.append(
            FieldError.invalid(
                f"{path}.apiGroups", _go_slice(groups), "if '*' is present, must not specify other API groups"
            )
        )
    if not versions:
        errs.append(FieldError.required(f"{path}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        errs.append(
            FieldError.invalid(
                f"{path}.apiVersions", _go_slice(versions), "if '*' is present, must not specify other API versions"
            )
        )
    errs += [FieldError.required(f"{path}.apiVersions[{i}]") for i, v in enumerate(versions) if not v]
    errs += _resources_errors(_list(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errs.append(FieldError.not_supported(f"{path}.scope", scope, SCOPES))
    return errs


def _url_errors(url: str, path: str) -> list[FieldError]:
    """webhook.ValidateWebhookURL with forceHttps."""
    form = "; desired format: https://host[/path]"
    try:
        parts = urlsplit(url)
    except ValueError as err:
        return [FieldError.required(path, f"url must be a valid URL: {err}{form}")]
    errs: list[FieldError] = []
    if parts.scheme != "https":
        errs.append(FieldError.invalid(path, parts.scheme, f"'https' is the only allowed URL scheme{form}"))
    if not parts.netloc.rsplit("@", 1)[-1]:
        errs.append(FieldError.invalid(path, "", f"host must be specified{form}"))
    if parts.username is not None:
        errs.append(
            FieldError.invalid(path, parts.netloc.rsplit("@", 1)[0], "user information is not permitted in the URL")
        )
    if parts.fragment:
        errs.append(FieldError.invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(FieldError.invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errs


def _service_errors(service: Obj, path: str) -> list[FieldError]:
    """webhook.ValidateWebhookService."""
    errs: list[FieldError] = []
    if not _text(service.get("name")):
        errs.append(FieldError.required(f"{path}.name", "service name is required"))
    if not _text(service.get("namespace")):
        errs.append(FieldError.required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port")
    if isinstance(port, int) and not 1 <= port <= 65535:
        errs.append(
            FieldError.invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
        )
    webhook_path = service.get("path")
    if isinstance(webhook_path, str) and not webhook_path.startswith("/"):
        errs.append(FieldError.invalid(f"{path}.path", webhook_path, "must start with a '/'"))
    return errs


def _webhook_errors(hook: Obj, path: str, *, mutating: bool) -> list[FieldError]:
    """validateValidatingWebhook / validateMutatingWebhook, in their order."""
    errs = _fully_qualified_name(_text(hook.get("name")), f"{path}.name")
    for i, rule in enumerate(_list(hook.get("rules"))):
        errs += _rule_errors(_dict(rule), f"{path}.rules[{i}]")
    for field, supported in (("failurePolicy", FAILURE_POLICIES), ("matchPolicy", MATCH_POLICIES)):
        value = hook.get(field)
        if value is not None and value not in supported:
            errs.append(FieldError.not_supported(f"{path}.{field}", value, supported))
    if mutating:
        value = hook.get("reinvocationPolicy")
        if value is not None and value not in REINVOCATION_POLICIES:
            errs.append(FieldError.not_supported(f"{path}.reinvocationPolicy", value, REINVOCATION_POLICIES))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(FieldError.required(f"{path}.sideEffects", "must specify one of " + ", ".join(SIDE_EFFECTS)))
    elif side_effects not in SIDE_EFFECTS:
        errs.append(FieldError.not_supported(f"{path}.sideEffects", side_effects, SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errs.append(
            FieldError.invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds")
        )
    for field in ("namespaceSelector", "objectSelector"):
        selector = hook.get(field)
        if isinstance(selector, dict):
            errs += labels.validate_label_selector(selector, f"{path}.{field}")
    config = _dict(hook.get("clientConfig"))
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        errs.append(FieldError.required(f"{path}.clientConfig", "exactly one of url or service is required"))
    elif isinstance(url, str):
        errs += _url_errors(url, f"{path}.clientConfig.url")
    else:
        errs += _service_errors(_dict(service), f"{path}.clientConfig.service")
    for i, condition in enumerate(_list(hook.get("matchConditions"))):
        condition = _dict(condition)
        cpath = f"{path}.matchConditions[{i}]"
        name = _text(condition.get("name"))
        if not name:
            errs.append(FieldError.required(f"{cpath}.name"))
        errs += [FieldError.invalid(f"{cpath}.name", name, m) for m in names.is_qualified_name(name)] if name else []
        if not _text(condition.get("expression")):
            errs.append(FieldError.required(f"{cpath}.expression"))
    return errs


def _review_versions_errors(versions: list[Any], path: str) -> list[FieldError]:
    """validateAdmissionReviewVersions, a recognized version required."""
    if not versions:
        return [FieldError.required(path, "must specify one of " + ", ".join(REVIEW_VERSIONS))]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version = _text(version)
        if version in seen:
            errs.append(FieldError.invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        errs += [FieldError.invalid(f"{path}[{i}]", version, m) for m in names.is_dns1035_label(version)]
    if not seen & set(REVIEW_VERSIONS):
        errs.append(
            FieldError.invalid(path, _go_slice(versions), "must include at least one of " + ", ".join(REVIEW_VERSIONS))
        )
    return errs


def _validator(mutating: bool) -> Callable[[Obj, Obj | None], list[FieldError]]:
    def validate(obj: Obj, old: Obj | None) -> list[FieldError]:
        """validate{Validating,Mutating}WebhookConfiguration: each webhook, its review versions, unique names."""
        errs: list[FieldError] = []
        seen: set[str] = set()
        for i, hook in enumerate(_list(obj.get("webhooks"))):
            hook = _dict(hook)
            path = f"webhooks[{i}]"
            errs += _webhook_errors(hook, path, mutating=mutating)
            errs += _review_versions_errors(
                _list(hook.get("admissionReviewVersions")), f"{path}.admissionReviewVersions"
            )
            name = _text(hook.get("name"))
            if name and name in seen:
                errs.append(FieldError.duplicate(f"{path}.name", name))
            seen.add(name)
        return errs

    return validate


VALIDATING_SCHEMA = ProtoSchema(admissionregistration_pb2.ValidatingWebhookConfiguration)
MUTATING_SCHEMA = ProtoSchema(admissionregistration_pb2.MutatingWebhookConfiguration)

VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    group=GROUP,
    version="v1",
    resource="validatingwebhookconfigurations",
    kind="ValidatingWebhookConfiguration",
    singular="validatingwebhookconfiguration",
    namespaced=False,
    schema=VALIDATING_SCHEMA,
    categories=("api-extensions",),
    strategy=Declared(
        standard_finalizers=False, unconditional_update=False,
        tracks_generation=True, defaults=retyped(VALIDATING_SCHEMA, _defaults(mutating=False)),
        validation=_validator(mutating=False),
    ),
)

MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    group=GROUP,
    version="v1",
    resource="mutatingwebhookconfigurations",
    kind="MutatingWebhookConfiguration",
    singular="mutatingwebhookconfiguration",
    namespaced=False,
    schema=MUTATING_SCHEMA,
    categories=("api-extensions",),
    strategy=Declared(
        standard_finalizers=False, unconditional_update=False,
        tracks_generation=True, defaults=retyped(MUTATING_SCHEMA, _defaults(mutating=True)),
        validation=_validator(mutating=True),
    ),
)

KINDS = (MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS)
