"""The ValidatingAdmissionPolicy plugin, as kube-apiserver 1.28 runs it (plugin/policy/validating).

- Policies and bindings (admissionregistration.k8s.io, stored once for v1beta1 and v1alpha1) are followed by
  informers; each policy is compiled once per generation (`Compiled`), so a policy or binding written takes
  effect on the next request, without restart. A binding naming no existing policy is ignored.
- A request is judged by a (policy, binding) pair when the policy's matchConstraints and the binding's
  matchResources (when given) both match it: namespaceSelector (a Namespace's own labels; always for other
  cluster-scoped objects), objectSelector (the new or the old object), excludeResourceRules (which win), then
  resourceRules (with resourceNames; under matchPolicy Equivalent a rule naming another version of the same
  resource matches). The policies and bindings themselves and the webhook configurations are exempt.
- Params: with a paramKind and a binding's paramRef, the objects named (`name`, in `namespace` or the
  request's namespace for a namespaced kind) or selected (`selector`) are read from an informer started for
  the kind on first use; the validations run once per param object. No paramRef (or no paramKind): `params`
  is null. None found with parameterNotFoundAction Deny is a configuration error; Allow admits.
- Then matchConditions (all true, else the pair is skipped), validations and auditAnnotations, with
  `object`, `oldObject`, `request`, `params`, `namespaceObject`, `authorizer` (server/admission/celauthz.py) and
  `variables` (each variable evaluated on first use, at most once per evaluation). A false validation's
  message is its messageExpression's value, else its message, else `failed expression: <expression>`; its
  reason defaults to Invalid.
- A failed validation is enforced by the binding's validationActions: Deny refuses the request (kube's
  `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>`, the reason's code), Warn adds a
  Warning (`Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': <message>`), Audit the
  audit annotation `validation.policy.admission.k8s.io/validation_failure`. An evaluation error follows the
  policy's failurePolicy (Fail: a failed validation with the error as message; Ignore: admitted); a
  configuration error (an unknown paramKind, missing params) with failurePolicy Fail refuses the request.
- auditAnnotations become `<policy>/<key>` audit annotations (values of several bindings joined).
- status: observedGeneration and typeChecking (server/admission/typecheck.py: against the matched custom
  resources' schemas) for each policy generation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.admission import Plugin, celauthz
from server.admission.webhooks import hooks as hk
from server.auth import caller
from server.kinds.admissionregistration import GROUP
from server.machinery import errors
from server.machinery.crdschema.cel import library
from server.machinery.crdschema.cel.engine import engine
from server.machinery.selectors import BadSelector
from server.machinery.selectors import labels as label_selectors
from server.machinery.values import Obj
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.core import Core
from server.objects.storeerrors import store_call
from server.runtime.informer import Handlers, Informer, SharedInformers, on_change

log = logging.getLogger(__name__)

POLICIES = "validatingadmissionpolicies"
BINDINGS = "validatingadmissionpolicybindings"
NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
CRDS = core_pb2.ResourcePath(group="apiextensions.k8s.io", version="v1", resource="customresourcedefinitions")
OPERATIONS = frozenset(("CREATE", "UPDATE", "DELETE", "CONNECT"))
FAILURE_KEY = "validation.policy.admission.k8s.io/validation_failure"
CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
MAX_MESSAGE = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
MAX_ANNOTATION_VALUE = 10 * 1024
FUNCTIONS = {**library.FUNCTIONS, **celauthz.FUNCTIONS}  # CEL's Kubernetes libraries and the authorizer's
_TARGETS = "policy-targets"  # Attributes.memo: the request's resource and its equivalents
_VARIABLE = re.compile(r"\bvariables\s*\.\s*([_a-zA-Z][_a-zA-Z0-9]*)")


class EvaluationError(Exception):
    """An expression that failed to compile or evaluate, with kube's text."""


@dataclass(frozen=True, slots=True)
class Expression:
    text: str
    program: Any  # None when it does not compile
    error: str = ""

    def run_in(self, context: Any) -> Any:
        """The value in an engine Context (Evaluation makes them)."""
        if self.program is None:
            raise EvaluationError(f"compilation failed: {self.error}")
        try:
            return self.program.execute(context)
        except Exception as err:  # the engine raises builtin errors for CEL's runtime errors
            raise EvaluationError(f"expression '{self.text}' resulted in error: {err}") from None


def _expression(text: str) -> Expression:
    try:
        return Expression(text, engine().compile(text))
    except ValueError as err:
        detail = str(err)
        return Expression(text, None, detail[detail.find("ERROR: "):] if "ERROR: " in detail else detail)


@dataclass(frozen=True, slots=True)
class Match:
    """A MatchResources, read once."""

    namespace_selector: label_selectors.Selector | None  # None: malformed
    object_selector: label_selectors.Selector | None
    rules: tuple[Obj, ...]
    excludes: tuple[Obj, ...]
    equivalent: bool


def _selector(raw: Any) -> label_selectors.Selector | None:
    try:
        return label_selectors.from_label_selector(raw if isinstance(raw, Mapping) else {})
    except BadSelector:
        return None


def _match(raw: Any) -> Match | None:
    if not isinstance(raw, Mapping):
        return None
    return Match(_selector(raw.get("namespaceSelector")), _selector(raw.get("objectSelector")),
                 tuple(dict(r) for r in raw.get("resourceRules") or [] if isinstance(r, Mapping)),
                 tuple(dict(r) for r in raw.get("excludeResourceRules") or [] if isinstance(r, Mapping)),
                 (raw.get("matchPolicy") or "Equivalent") == "Equivalent")


@dataclass(frozen=True, slots=True)
class Validation:
    expression: Expression
    message: str
    message_expression: Expression | None
    reason: str


@dataclass(frozen=True, slots=True, eq=False)
class Compiled:
    """One generation of a policy."""

    name: str
    revision: tuple[str, int]  # (uid, generation)
    fail: bool  # failurePolicy Fail
    param_kind: tuple[str, str] | None  # (apiVersion, kind)
    match: Match | None
    conditions: tuple[tuple[str, Expression], ...]
    variables: Mapping[str, Expression]
    validations: tuple[Validation, ...]
    annotations: tuple[tuple[str, Expression], ...]
    functions: Mapping[str, Any]  # those of FUNCTIONS its expressions call (each one registered costs a little)


def compile_policy(policy: Obj) -> Compiled:
    meta, spec = policy.get("metadata") or {}, policy.get("spec") or {}
    kind = spec.get("paramKind")
    texts = " ".join(str(item.get(field) or "") for list_name, field in (
        ("validations", "expression"), ("validations", "messageExpression"), ("matchConditions", "expression"),
        ("variables", "expression"), ("auditAnnotations", "valueExpression"))
        for item in spec.get(list_name) or [] if isinstance(item, Mapping))
    called = set(re.findall(r"([_a-zA-Z][_a-zA-Z0-9]*)\s*\(", texts))
    validations = []
    for raw in spec.get("validations") or []:
        message_expression = str(raw.get("messageExpression") or "").strip()
        validations.append(Validation(_expression(str(raw.get("expression") or "")),
                                      str(raw.get("message") or "").strip(),
                                      _expression(message_expression) if message_expression else None,
                                      str(raw.get("reason") or "")))
    return Compiled(
        name=str(meta.get("name") or ""), revision=(str(meta.get("uid") or ""), int(meta.get("generation") or 0)),
        fail=(spec.get("failurePolicy") or "Fail") == "Fail",
        param_kind=(str(kind.get("apiVersion") or ""), str(kind.get("kind") or "")) if isinstance(kind, Mapping)
        else None,
        match=_match(spec.get("matchConstraints")),
        conditions=tuple((str(c.get("name") or ""), _expression(str(c.get("expression") or "")))
                         for c in spec.get("matchConditions") or []),
        variables={str(v.get("name") or ""): _expression(str(v.get("expression") or ""))
                   for v in spec.get("variables") or []},
        validations=tuple(validations),
        annotations=tuple((str(a.get("key") or ""), _expression(str(a.get("valueExpression") or "")))
                          for a in spec.get("auditAnnotations") or []),
        functions={name: function for name, function in FUNCTIONS.items() if name in called},
    )


class ConfigError(Exception):
    """A policy or binding that cannot be applied (kube's configuration errors)."""


@dataclass
class _Denied:
    policy: str
    binding: str  # "" for a policy's own configuration error
    message: str
    reason: str = ""


# Values handed to the engine only when an expression names them (through its variable resolver): converting
# values for the engine, not running an expression, is what an evaluation costs.
_LAZY = ("namespaceObject", "authorizer")


def _context(values: Mapping[str, Any], functions: Mapping[str, Any]) -> Any:
    """An engine context of `values`, those in _LAZY converted only for the expressions that name them (a
    null one is registered: the resolver cannot answer null)."""
    lazy = {name: values[name] for name in _LAZY if values.get(name) is not None}
    context = engine().Context(variables={k: v for k, v in values.items() if k not in lazy},
                               functions=dict(functions))
    if lazy:
        context.set_variable_resolver(lazy.get)
    return context


class Request:
    """What every policy reads of one request, and the engine context holding it, which the policies without
    params or variables share."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = {**values, "variables": {}}
        self._context: Any = None
        self._functions: set[str] = set()

    def context(self, functions: Mapping[str, Any]) -> Any:
        """The shared context, holding at least `functions` (adding one rebuilds it: rare, as policies
        call few)."""
        if self._context is None:
            self._context = _context(self.values, functions)
            self._functions = set(functions)
        else:
            for name in functions.keys() - self._functions:
                self._context.add_function(name, functions[name])
                self._functions.add(name)
        return self._context


class Evaluation:
    """One evaluation of a policy (for one binding and param): its variables, and `variables.<name>` each
    evaluated on first use, once. Its context is the request's when it has neither params nor variables, else
    its own (reused until a variable is added)."""

    def __init__(self, policy: Compiled, request: Request, param: Obj | None) -> None:
        self._definitions = policy.variables
        self._functions = policy.functions
        self._shared = request if policy.param_kind is None and not policy.variables else None
        self._values = request.values if self._shared is not None else {**request.values, "params": param}
        self._done: dict[str, Any] = {}
        self._failed: dict[str, EvaluationError] = {}
        self._context: Any = None
        self._held = 0  # how many variables the context holds

    def run(self, expression: Expression) -> Any:
        for name in _VARIABLE.findall(expression.text):
            self._evaluate(name, ())
        return expression.run_in(self._current())

    def _current(self) -> Any:
        if self._shared is not None:
            return self._shared.context(self._functions)
        if self._context is None:
            self._context = _context(self._values, self._functions)
            self._held = 0
        if self._held != len(self._done):
            self._context.add_variable("variables", dict(self._done))
            self._held = len(self._done)
        return self._context

    def _evaluate(self, name: str, path: tuple[str, ...]) -> None:
        if name in self._done or name not in self._definitions or name in path:
            return
        if name in self._failed:
            raise self._failed[name]
        definition = self._definitions[name]
        for used in _VARIABLE.findall(definition.text):
            self._evaluate(used, (*path, name))
        try:
            self._done[name] = definition.run_in(self._current())
        except EvaluationError as err:
            self._failed[name] = err
            raise


class Policies:
    """The ValidatingAdmissionPolicy plugin of one core and what it follows."""

    def __init__(self, core: Core, informers: SharedInformers, version: str = "v1beta1") -> None:
        """version: the served version of the policy kinds to follow (both share one storage)."""
        self._core = core
        self._informers = informers
        self._version = version
        self._policies = informers.informer(core_pb2.ResourcePath(group=GROUP, version=version, resource=POLICIES))
        self._bindings = informers.informer(core_pb2.ResourcePath(group=GROUP, version=version, resource=BINDINGS))
        self._namespaces = informers.informer(NAMESPACES)
        self._crds = informers.informer(CRDS)  # the schemas policies are type checked against
        self._compiled: dict[str, Compiled] = {}
        self._params: dict[tuple[str, str, str], asyncio.Task[Informer[Obj]]] = {}
        self._status_written: dict[str, int] = {}
        self._writers: set[asyncio.Task[None]] = set()
        # The policies by name, each with its bindings by name: made again after a policy or binding changed.
        self._plan: list[tuple[str, list[Obj]]] | None = None
        self._changes: Handlers[Obj] = on_change(self._forget_plan)
        self._policy_changes: Handlers[Obj] = on_change(self._policy_changed)

    def _forget_plan(self, old: Obj | None, new: Obj | None) -> None:
        self._plan = None

    def _policy_changed(self, old: Obj | None, new: Obj | None) -> None:
        """A new policy generation is compiled (and its status written) when it arrives, not at first use."""
        self._plan = None
        if new is not None:
            self._policy(str((new.get("metadata") or {}).get("name") or ""))
        elif old is not None:
            self._compiled.pop(str((old.get("metadata") or {}).get("name") or ""), None)
    def _current_plan(self) -> list[tuple[str, list[Obj]]]:
        if self._plan is None:
            by_policy: dict[str, list[Obj]] = {}
            for _, binding in sorted(self._bindings.cache.items(), key=lambda item: item[0][1]):
                by_policy.setdefault(str((binding.get("spec") or {}).get("policyName") or ""), []).append(binding)
            self._plan = [(name, by_policy.get(name, [])) for name in sorted(n for _, n in self._policies.cache)]
        return self._plan

    async def start(self) -> None:
        self._policies.add_handlers(self._policy_changes)
        self._bindings.add_handlers(self._changes)
        for informer in (self._crds, self._policies, self._bindings, self._namespaces):
            await informer.start()

    async def stop(self) -> None:
        for writer in self._writers:
            writer.cancel()
        self._policies.remove_handlers(self._policy_changes)
        self._bindings.remove_handlers(self._changes)
        for informer in (self._policies, self._bindings, self._namespaces, self._crds):
            await informer.stop()
        for task in self._params.values():
            if task.done() and not task.cancelled() and task.exception() is None:
                await task.result().stop()
            else:
                task.cancel()

    def plugins(self, on: frozenset[str]) -> list[Plugin]:
        if "ValidatingAdmissionPolicy" not in on:
            return []
        return [Plugin("ValidatingAdmissionPolicy", OPERATIONS, validate=self.validate,
                       idle=lambda: not self._policies.cache)]

    # --- what is followed ------------------------------------------------------------------------------------

    def follows(self, resource: str, name: str, resource_version: str) -> bool:
        """Whether the policy (`validatingadmissionpolicies`) or binding named has reached this plugin at
        `resource_version` or later ("": its deletion has)."""
        informer = self._policies if resource == POLICIES else self._bindings
        found = informer.cache.get(("", name))
        if not resource_version:
            return found is None
        held = str(((found or {}).get("metadata") or {}).get("resourceVersion") or "0")
        return found is not None and int(held) >= int(resource_version)

    def _policy(self, name: str) -> Compiled | None:
        raw = self._policies.cache.get(("", name))
        if raw is None:
            return None
        meta = raw.get("metadata") or {}
        revision = (str(meta.get("uid") or ""), int(meta.get("generation") or 0))
        compiled = self._compiled.get(name)
        if compiled is None or compiled.revision != revision:
            compiled = self._compiled[name] = compile_policy(raw)
            self._observe(raw, compiled)
        return compiled

    def _observe(self, raw: Obj, compiled: Compiled) -> None:
        """Write status.observedGeneration and typeChecking once per generation."""
        status = raw.get("status") or {}
        generation = compiled.revision[1]
        if status.get("observedGeneration") == generation or self._status_written.get(compiled.name) == generation:
            return
        self._status_written[compiled.name] = generation
        task = asyncio.get_running_loop().create_task(self._write_status(raw, generation))
        self._writers.add(task)
        task.add_done_callback(self._writers.discard)

    async def _write_status(self, raw: Obj, generation: int) -> None:
        from server.admission import typecheck  # CEL's parser and checker load with the first policy

        body = {"apiVersion": f"{GROUP}/{self._version}", "kind": "ValidatingAdmissionPolicy",
                **{k: v for k, v in raw.items() if k not in ("apiVersion", "kind")}}
        body["status"] = {**(raw.get("status") or {}), "observedGeneration": generation,
                          "typeChecking": typecheck.type_checking(raw, self._crds.cache.values())}
        path = core_pb2.ResourcePath(group=GROUP, version=self._version, resource=POLICIES,
                                     name=str((raw.get("metadata") or {}).get("name") or ""), subresource="status")
        try:
            await self._core.update(core_pb2.UpdateRequest(path=path, object=core_pb2.RawObject(
                encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))))
        except errors.ApiError as err:
            if err.code not in (404, 409):
                log.warning("ValidatingAdmissionPolicy %s: status update failed: %s", path.name, err)

    async def _param_kind_known(self, policy: Compiled) -> None:
        """A paramKind no served resource has is the policy's configuration error."""
        if policy.param_kind is not None:
            api_version, kind = policy.param_kind
            group, _, version = api_version.rpartition("/")
            if self._core.registry.by_kind(group, version, kind) is None:
                raise ConfigError(f"failed to find resource referenced by paramKind: '{_gvk(api_version, kind)}'")

    async def _param_informer(self, api_version: str, kind: str) -> tuple[Informer[Obj], bool] | None:
        """The informer of a paramKind's objects (started on first use) and whether the kind is namespaced;
        None when no served resource has the kind."""
        group, _, version = api_version.rpartition("/")
        resource = self._core.registry.by_kind(group, version, kind)
        if resource is None:
            return None
        key = (group, version, resource.resource)
        task = self._params.get(key)
        if task is None:
            informer = self._informers.informer(core_pb2.ResourcePath(group=group, version=version,
                                                                      resource=resource.resource))

            async def started() -> Informer[Obj]:
                await informer.start()
                return informer

            task = self._params[key] = asyncio.get_running_loop().create_task(started())
        try:
            async with asyncio.timeout(1.0):
                return await asyncio.shield(task), resource.namespaced
        except TimeoutError:
            raise ConfigError(f"paramKind kind `{_gvk(api_version, kind)}` not yet synced to use for "
                              "admission") from None

    # --- the plugin ------------------------------------------------------------------------------------------

    async def validate(self, ctx: Context, attrs: Attributes) -> None:
        r = attrs.resource
        if (r.group, r.resource) in hk.EXEMPT:
            return
        denied: list[_Denied] = []
        namespace_object: Obj | bool | None = False  # False: not read yet
        request: Request | None = None
        for policy_name, bindings in self._current_plan():
            policy = self._policy(policy_name)
            if policy is None:
                continue
            try:
                if policy.match is None or not await self._matches(ctx, policy.match, attrs, constraint=True):
                    continue
                await self._param_kind_known(policy)
            except ConfigError as err:
                if policy.fail:
                    denied.append(_Denied(policy.name, "", f"failed to configure policy: {err}"))
                continue
            annotations: dict[str, list[str]] = {}
            for binding in bindings:
                binding_name = str((binding.get("metadata") or {}).get("name") or "")
                spec = binding.get("spec") or {}
                try:
                    match = _match(spec.get("matchResources"))
                    if match is not None and not await self._matches(ctx, match, attrs, constraint=False):
                        continue
                    params = await self._collect_params(policy, spec.get("paramRef"), attrs.namespace)
                except ConfigError as err:
                    if policy.fail:
                        denied.append(_Denied(policy.name, binding_name, f"failed to configure binding: {err}"))
                    continue
                if namespace_object is False:
                    namespace_object = await self._namespace_object(ctx, attrs)
                actions = [str(a) for a in spec.get("validationActions") or []]
                if request is None:
                    request = Request({
                        "object": _shown(attrs, attrs.obj), "oldObject": _shown(attrs, attrs.old),
                        "request": _request(attrs),
                        "namespaceObject": namespace_object if isinstance(namespace_object, dict) else None,
                        "authorizer": celauthz.current(celauthz.RequestResource(
                            attrs.resource.group, attrs.resource.resource, attrs.subresource, attrs.namespace,
                            attrs.name))})
                for param in params:
                    self._evaluate(policy, binding_name, actions, attrs, Evaluation(policy, request, param),
                                   denied, annotations)
            for key, values in annotations.items():
                attrs.audit_annotations.setdefault(f"{policy.name}/{key}", ", ".join(values))
        if denied:
            raise _denial(denied[0], attrs)

    def _evaluate(self, policy: Compiled, binding: str, actions: list[str], attrs: Attributes,
                  evaluation: Evaluation, denied: list[_Denied], annotations: dict[str, list[str]]) -> None:
        failures: list[tuple[int, str, str]] = []  # (index, message, reason)
        try:
            for _, condition in policy.conditions:
                result = evaluation.run(condition)
                if result is False:
                    return
                if result is not True:
                    raise EvaluationError(f"expression '{condition.text}' resulted in error: no such overload")
        except EvaluationError as err:
            if policy.fail:
                failures.append((0, str(err), ""))
            self._enforce(policy, binding, actions, failures, attrs, denied)
            return
        for index, validation in enumerate(policy.validations):
            try:
                result = evaluation.run(validation.expression)
                if result is not True and result is not False:
                    raise EvaluationError(f"expression '{validation.expression.text}' resulted in error: "
                                          "no such overload")
            except EvaluationError as err:
                if policy.fail:
                    failures.append((index, str(err), ""))
                continue
            if result is False:
                failures.append((index, _message(validation, evaluation), validation.reason))
        for key, annotation in policy.annotations:
            try:
                value = evaluation.run(annotation)
            except EvaluationError as err:
                if policy.fail:
                    denied.append(_Denied(policy.name, binding, str(err)))
                continue
            if isinstance(value, str) and value:
                published = annotations.setdefault(key, [])
                if value[:MAX_ANNOTATION_VALUE] not in published:
                    published.append(value[:MAX_ANNOTATION_VALUE])
        self._enforce(policy, binding, actions, failures, attrs, denied)

    @staticmethod
    def _enforce(policy: Compiled, binding: str, actions: list[str], failures: list[tuple[int, str, str]],
                 attrs: Attributes, denied: list[_Denied]) -> None:
        for index, message, reason in failures:
            for action in actions:
                if action == "Deny":
                    denied.append(_Denied(policy.name, binding, message, reason))
                elif action == "Warn":
                    attrs.warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with "
                                          f"binding '{binding}': {message}")
                elif action == "Audit":
                    value = json.dumps([{"message": message, "policy": policy.name, "binding": binding,
                                         "expressionIndex": index, "validationActions": actions}],
                                       separators=(",", ":"))
                    attrs.audit_annotations.setdefault(FAILURE_KEY, value)

    # --- matching --------------------------------------------------------------------------------------------

    async def _matches(self, ctx: Context, match: Match, attrs: Attributes, *, constraint: bool) -> bool:
        """kube's generic Matcher: selectors, then excluded rules, then rules (none: all, for a binding)."""
        namespace_ok, namespace_error = await self._namespace_matches(ctx, match, attrs)
        if not namespace_ok and not namespace_error:
            return False
        if match.object_selector is None or not hk.selector_matches(match.object_selector, attrs.obj, attrs.old):
            return False
        if any(self._rule_matches(rule, match.equivalent, attrs) for rule in match.excludes):
            return False
        if (match.rules or constraint) and not any(self._rule_matches(r, match.equivalent, attrs)
                                                   for r in match.rules):
            return False
        if namespace_error:
            raise ConfigError(namespace_error)
        return True

    def _rule_matches(self, rule: Mapping[str, Any], equivalent: bool, attrs: Attributes) -> bool:
        names = rule.get("resourceNames") or []
        if names and attrs.name not in names:
            return False
        targets = self._targets(attrs)
        return any(hk.rule_matches(rule, attrs.operation, t, attrs.subresource, attrs.namespace)
                   for t in (targets if equivalent else targets[:1]))

    def _targets(self, attrs: Attributes) -> tuple[hk.Target, ...]:
        """The request's resource, then its other served versions (what matchPolicy Equivalent also matches),
        found once a request."""
        found = attrs.memo.get(_TARGETS)
        if isinstance(found, tuple):
            return found
        r = attrs.resource
        targets = (hk.Target(r.group, r.version, r.resource, r.kind),
                   *(hk.Target(o.group, o.version, o.resource, o.kind)
                     for o in self._core.registry.by_group_resource(r.group, r.resource) if o.version != r.version))
        attrs.memo[_TARGETS] = targets
        return targets

    async def _namespace_matches(self, ctx: Context, match: Match, attrs: Attributes) -> tuple[bool, str]:
        selector = match.namespace_selector
        if selector is None:
            return False, ""
        if selector.empty:
            return True, ""
        r = attrs.resource
        if r.group == "" and r.resource == "namespaces":
            return hk.selector_matches(selector, attrs.obj, attrs.old), ""
        if not r.namespaced:
            return True, ""
        namespace = await self._namespace_object(ctx, attrs)
        if namespace is None:
            return False, f'namespace "{attrs.namespace}" not found'
        found = (namespace.get("metadata") or {}).get("labels")
        return selector.matches(found if isinstance(found, Mapping) else {}), ""

    async def _namespace_object(self, ctx: Context, attrs: Attributes) -> Obj | None:
        if not attrs.namespace or not attrs.resource.namespaced:
            return None
        found = self._namespaces.cache.get(("", attrs.namespace))
        if found is None:
            got = await store_call(ctx.store.get(ctx.namespace_key(attrs.namespace)))
            if got.kv is None:
                return None
            found = json.loads(got.kv.value)
        return {"apiVersion": "v1", "kind": "Namespace", **{k: v for k, v in found.items()
                                                             if k not in ("apiVersion", "kind")}}

    # --- params ----------------------------------------------------------------------------------------------

    async def _collect_params(self, policy: Compiled, ref: Any, namespace: str) -> list[Obj | None]:
        """kube's collectParams: the param objects to evaluate with ([None]: no params; []: none and Allow)."""
        if policy.param_kind is None or not isinstance(ref, Mapping):
            return [None]
        api_version, kind = policy.param_kind
        found = await self._param_informer(api_version, kind)
        if found is None:
            raise ConfigError(f"failed to find resource referenced by paramKind: '{_gvk(api_version, kind)}'")
        informer, namespaced = found
        ref_namespace, name = str(ref.get("namespace") or ""), str(ref.get("name") or "")
        scope = ""
        if namespaced:
            scope = ref_namespace or namespace
            if not scope:
                raise ConfigError("cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                                  "resources")
        elif ref_namespace:
            raise ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        params: list[Obj | None]
        if name:
            got = informer.cache.get((scope, name))
            params = [] if got is None else [got]
        elif isinstance(ref.get("selector"), Mapping):
            selector = _selector(ref["selector"])
            if selector is None:
                raise ConfigError("paramRef.selector is not a valid label selector")
            candidates = informer.cache.values() if not namespaced else [
                o for o in informer.cache.values() if (o.get("metadata") or {}).get("namespace") == scope]
            params = [o for o in candidates if selector.matches((o.get("metadata") or {}).get("labels") or {})]
        else:
            raise ConfigError("one of name or selector must be provided")
        if not params and (ref.get("parameterNotFoundAction") or "Deny") == "Deny":
            raise ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return [{"apiVersion": api_version, "kind": kind, **{k: v for k, v in p.items()
                                                              if k not in ("apiVersion", "kind")}}
                if p is not None else None for p in params]


def _gvk(api_version: str, kind: str) -> str:
    """schema.GroupVersionKind.String()."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _message(validation: Validation, evaluation: Evaluation) -> str:
    if validation.message_expression is not None:
        try:
            value = evaluation.run(validation.message_expression)
        except EvaluationError as err:
            log.info("messageExpression failed: %s", err)
            value = None
        if isinstance(value, str):
            value = value.strip()
            if value and len(value) <= MAX_MESSAGE and "\n" not in value:
                return value
    if validation.message:
        return validation.message
    return f"failed expression: {validation.expression.text.strip()}"


def _shown(attrs: Attributes, obj: Obj | None) -> Obj | None:
    if obj is None:
        return None
    return {"kind": attrs.resource.kind, "apiVersion": attrs.resource.api_version,
            **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}}


def _request(attrs: Attributes) -> Obj:
    """The AdmissionRequest CEL reads as `request`."""
    r = attrs.resource
    kind = {"group": r.group, "version": r.version, "kind": r.kind}
    resource = {"group": r.group, "version": r.version, "resource": r.resource}
    return {"uid": str(uuid.uuid4()), "kind": kind, "resource": resource, "subResource": attrs.subresource,
            "requestKind": kind,
            "requestResource": resource, "requestSubResource": attrs.subresource, "name": attrs.name,
            "namespace": attrs.namespace, "operation": attrs.operation,
            "userInfo": caller.current().user.to_json(), "dryRun": attrs.dry_run, "options": attrs.options or None}


def _denial(first: _Denied, attrs: Attributes) -> errors.ApiError:
    """admission.NewForbidden with the decision's reason and its code (Invalid, 422, by default)."""
    if first.binding:
        message = (f"ValidatingAdmissionPolicy '{first.policy}' with binding '{first.binding}' denied request: "
                   f"{first.message}")
    else:
        message = f"ValidatingAdmissionPolicy '{first.policy}' denied request: {first.message}"
    r = attrs.resource
    name = attrs.name or str(((attrs.obj or {}).get("metadata") or {}).get("generateName") or "")
    qualified = errors.qualified(r.resource, r.group)
    text = f'{qualified} "{name}" is forbidden: {message}' if name else f"{qualified} is forbidden: {message}"
    reason = first.reason or "Invalid"
    return errors.ApiError(errors.status(CODES.get(reason, 422), reason, text, name=name, group=r.group,
                                         kind=r.resource, causes=(errors.Cause("", message),)))
