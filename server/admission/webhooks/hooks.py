"""A webhook of a Mutating- or ValidatingWebhookConfiguration as the dispatcher uses it, read once per
configuration revision, and kube's rules for whether a request reaches it (rules.Matcher, matchPolicy,
namespaceSelector, objectSelector, matchConditions)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.callouts.client import ClientConfig
from server.machinery.crdschema.cel import library
from server.machinery.crdschema.cel.engine import engine
from server.machinery.selectors import BadSelector
from server.machinery.selectors import labels as label_selectors
from server.machinery.values import Obj

DEFAULT_TIMEOUT = 10  # seconds (admissionregistration/v1 default)

# Never sent to webhooks: the configurations themselves (kube's IsExemptAdmissionConfigurationResource).
EXEMPT = frozenset((
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
))


@dataclass(frozen=True, slots=True)
class Condition:
    name: str
    program: Any  # the compiled CEL program, or None when it does not compile
    error: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Hook:
    configuration: str
    name: str
    mutating: bool
    client: ClientConfig
    rules: tuple[Obj, ...]
    failure_policy: str
    match_policy: str
    namespace_selector: label_selectors.Selector | None  # None: the selector is malformed (never matches)
    object_selector: label_selectors.Selector | None
    side_effects: str
    timeout: float
    review_versions: tuple[str, ...]
    reinvocation: str
    conditions: tuple[Condition, ...]

    @property
    def kind(self) -> str:
        """The metrics' `type` label."""
        return "admit" if self.mutating else "validate"


def hooks_of(configuration: Obj, *, mutating: bool) -> list[Hook]:
    name = str((configuration.get("metadata") or {}).get("name") or "")
    return [_hook(name, raw, mutating) for raw in configuration.get("webhooks") or [] if isinstance(raw, Mapping)]


def _selector(raw: Any) -> label_selectors.Selector | None:
    try:
        return label_selectors.from_label_selector(raw if isinstance(raw, Mapping) else {})
    except BadSelector:
        return None


def _hook(configuration: str, raw: Mapping[str, Any], mutating: bool) -> Hook:
    conditions = []
    for c in raw.get("matchConditions") or []:
        try:
            conditions.append(Condition(str(c.get("name") or ""), engine().compile(str(c.get("expression") or ""))))
        except ValueError as err:
            conditions.append(Condition(str(c.get("name") or ""), None, str(err)))
    return Hook(
        configuration=configuration,
        name=str(raw.get("name") or ""),
        mutating=mutating,
        client=ClientConfig.from_json(raw.get("clientConfig") or {}),
        rules=tuple(dict(r) for r in raw.get("rules") or [] if isinstance(r, Mapping)),
        failure_policy=str(raw.get("failurePolicy") or "Fail"),
        match_policy=str(raw.get("matchPolicy") or "Equivalent"),
        namespace_selector=_selector(raw.get("namespaceSelector")),
        object_selector=_selector(raw.get("objectSelector")),
        side_effects=str(raw.get("sideEffects") or "Unknown"),
        timeout=float(raw.get("timeoutSeconds") or DEFAULT_TIMEOUT),
        review_versions=tuple(str(v) for v in raw.get("admissionReviewVersions") or ("v1beta1",)),
        reinvocation=str(raw.get("reinvocationPolicy") or "Never"),
        conditions=tuple(conditions),
    )


@dataclass(frozen=True, slots=True)
class Target:
    """What a request looks like to the webhook: the group, version, resource and kind a rule matched (the
    request's own, or an equivalent version's under matchPolicy Equivalent)."""

    group: str
    version: str
    resource: str
    kind: str


def rule_matches(rule: Mapping[str, Any], operation: str, target: Target, subresource: str, namespace: str) -> bool:
    """kube's rules.Matcher: operations, apiGroups, apiVersions, resources (`*`, `res/*`, `*/sub`) and scope."""
    operations = rule.get("operations") or []
    if "*" not in operations and operation not in operations:
        return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" not in groups and target.group not in groups:
        return False
    if "*" not in versions and target.version not in versions:
        return False
    if not any(_resource_matches(str(r), target.resource, subresource) for r in rule.get("resources") or []):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster":
        return namespace == ""
    if scope == "Namespaced":
        return namespace != ""
    return True


def _resource_matches(pattern: str, resource: str, subresource: str) -> bool:
    res, _, sub = pattern.partition("/")
    return (res in ("*", resource)) and (sub in ("*", subresource))


def any_rule(hook: Hook, operation: str, target: Target, subresource: str, namespace: str) -> bool:
    return any(rule_matches(r, operation, target, subresource, namespace) for r in hook.rules)


def selector_matches(selector: label_selectors.Selector | None, *objects: Obj | None) -> bool:
    """An objectSelector: the new or the old object's labels match (an empty selector matches all)."""
    if selector is None:
        return False
    if selector.empty:
        return True
    return any(selector.matches(_labels(o)) for o in objects if o is not None)


def _labels(obj: Obj) -> Mapping[str, str]:
    found = (obj.get("metadata") or {}).get("labels")
    return found if isinstance(found, Mapping) else {}


class ConditionError(Exception):
    """A matchCondition that does not evaluate to a bool; follows the webhook's failurePolicy."""


def conditions_match(hook: Hook, variables: Mapping[str, Any],
                     functions: Mapping[str, Callable[..., Any]] | None = None) -> bool:
    """All matchConditions true (kube evaluates them in order and stops at the first false). functions: the
    library functions the expressions may call (the CEL library, and the authorizer's bound to the request).
    Variables are converted for the engine only when an expression reads them (its variable resolver): a
    condition on the object's name does not pay for converting the whole request; those that are null are
    given at once (the resolver cannot answer null)."""
    nulls = {name: None for name, value in variables.items() if value is None}
    for condition in hook.conditions:
        if condition.program is None:
            raise ConditionError(f"compilation failed for matchCondition {condition.name!r}: {condition.error}")
        context = engine().Context(variables=nulls, functions=dict(functions or library.FUNCTIONS))
        context.set_variable_resolver(variables.get)
        try:
            result = condition.program.execute(context)
        except Exception as err:  # the engine raises builtin errors for CEL's runtime errors
            raise ConditionError(f"matchCondition {condition.name!r} failed: {err}") from None
        if result is False:
            return False
        if result is not True:
            raise ConditionError(f"matchCondition {condition.name!r} did not evaluate to a bool")
    return True


def review_version(hook: Hook, supported: Sequence[str] = ("v1", "v1beta1")) -> str:
    """The first of the webhook's admissionReviewVersions the server speaks; "" when none."""
    return next((v for v in hook.review_versions if v in supported), "")
