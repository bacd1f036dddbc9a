"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook, as kube-apiserver 1.28 calls them.

- The configurations are followed by informers (so a change takes effect without restart) and read into
  `Hook`s once per configuration revision; webhooks run in the order of their configurations' names, then
  their order within one.
- A request reaches a webhook when a rule matches it (operations, apiGroups, apiVersions, resources with `*`
  and `*/sub`, scope), its namespaceSelector matches the namespace's labels (a Namespace's own; always for
  other cluster-scoped objects), its objectSelector the new or old object's labels and every matchCondition is
  true (CEL over request, object, oldObject and authorizer, kube's authz library: server/admission/celauthz.py,
  checked with the guard's authorizer for the request's user). The configurations themselves are exempt.
- Mutating webhooks run one after another; a JSONPatch answer is applied, the object typed and pruned by its
  kind's schema, and validated again once the mutating phase is over. `reinvocationPolicy: IfNeeded` webhooks
  run once more when a later webhook changed the object after them. Validating webhooks run concurrently.
- A dry run refuses webhooks whose sideEffects are not None/NoneOnDryRun (kube's 400); a call that fails
  (unreachable, timed out, TLS, non-200, malformed) follows failurePolicy: Fail answers kube's 500
  `failed calling webhook`, Ignore goes on. A denial answers kube's `admission webhook "NAME" denied the request`
  with the webhook's code (400 at least) and reason. Warnings become Warning headers; auditAnnotations go to
  the audit event as `<webhook name>/<key>`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.admission import Plugin, celauthz
from server.admission.webhooks import hooks as hk
from server.auth import caller
from server.callouts import metrics
from server.callouts.client import CallError, Callouts
from server.machinery import deadline, errors
from server.machinery.crdschema.cel import library
from server.machinery.values import Obj
from server.objects import body, equivalent, serviceresolver, validate
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.core import Core
from server.objects.patch import JsonPatchFailed, json_patched, parse_json_patch
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from server.runtime.informer import SharedInformers

MUTATING = core_pb2.ResourcePath(group="admissionregistration.k8s.io", version="v1",
                                 resource="mutatingwebhookconfigurations")
VALIDATING = core_pb2.ResourcePath(group="admissionregistration.k8s.io", version="v1",
                                   resource="validatingwebhookconfigurations")
NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
SERVICES = core_pb2.ResourcePath(version="v1", resource="services")
ENDPOINTS = core_pb2.ResourcePath(version="v1", resource="endpoints")
OPERATIONS = frozenset(("CREATE", "UPDATE", "DELETE", "CONNECT"))


class Webhooks:
    """The two webhook plugins of one core and what they follow."""

    def __init__(self, core: Core, informers: SharedInformers) -> None:
        self._core = core
        self._mutating = informers.informer(MUTATING)
        self._validating = informers.informer(VALIDATING)
        self._namespaces = informers.informer(NAMESPACES)
        self._services = informers.informer(SERVICES)
        self._endpoints = informers.informer(ENDPOINTS)
        self._informers = (self._mutating, self._validating, self._namespaces, self._services, self._endpoints)
        self._read: dict[tuple[bool, str], tuple[str, list[hk.Hook]]] = {}
        self._equivalent: dict[tuple[str, str, str, str], list[Resource]] = {}
        self._equivalent_generation = -1
        self.callouts = Callouts(self.resolve)

    async def start(self) -> None:
        for informer in self._informers:
            await informer.start()

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
        await self.callouts.close()

    def plugins(self, on: frozenset[str]) -> list[Plugin]:
        out = []
        if "MutatingAdmissionWebhook" in on:
            out.append(Plugin("MutatingAdmissionWebhook", OPERATIONS, mutate=self.mutate,
                              idle=lambda: not self._mutating.cache))
        if "ValidatingAdmissionWebhook" in on:
            out.append(Plugin("ValidatingAdmissionWebhook", OPERATIONS, validate=self.validate,
                              idle=lambda: not self._validating.cache))
        return out

    # --- the configurations ----------------------------------------------------------------------------------

    def hooks(self, mutating: bool) -> list[hk.Hook]:
        informer = self._mutating if mutating else self._validating
        out: list[hk.Hook] = []
        for (_, name), config in sorted(informer.cache.items(), key=lambda item: item[0][1]):
            revision = str((config.get("metadata") or {}).get("resourceVersion") or "")
            read = self._read.get((mutating, name))
            if read is None or read[0] != revision:
                read = self._read[(mutating, name)] = (revision, hk.hooks_of(config, mutating=mutating))
            out.extend(read[1])
        return out

    async def resolve(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        """A Service's port to one ready endpoint, as kube's aggregator routing resolves it (the Service and its
        Endpoints from this core's informers, else its EndpointSlices)."""
        try:
            endpoint = await serviceresolver.resolve(
                self._core, namespace, name, port, service=self._services.cache.get((namespace, name)),
                endpoints=self._endpoints.cache.get((namespace, name)), cached=True)
        except serviceresolver.Unresolved as err:
            raise CallError(str(err)) from None
        return endpoint.host, endpoint.port

    async def _namespace_labels(self, ctx: Context, namespace: str) -> Mapping[str, str] | None:
        found = self._namespaces.cache.get(("", namespace))
        if found is None:
            got = await store_call(ctx.store.get(ctx.namespace_key(namespace)))
            if got.kv is None:
                return None
            found = json.loads(got.kv.value)
        labels = (found.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, Mapping) else {}

    # --- whether a webhook is called -------------------------------------------------------------------------

    async def _should_call(self, ctx: Context, hook: hk.Hook, attrs: Attributes) -> Invocation | None:
        """The invocation when the request reaches the webhook, else None; raises the failure policy's error for
        a namespace or matchCondition that cannot be judged. A rule matches the request's own resource or, under
        matchPolicy Equivalent, an equivalent one (kube's ShouldCallHook: the request's own first, then the rules
        in order against each equivalent); the objects are then converted to the matched resource's form."""
        r = attrs.resource
        if (r.group, r.resource) in hk.EXEMPT:
            return None
        matched = self._matched(hook, attrs)
        if matched is None:
            return None
        if not await self._namespace_matches(ctx, hook, attrs):
            return None
        if not hk.selector_matches(hook.object_selector, attrs.obj, attrs.old):
            return None
        invocation = await _invocation(attrs, matched)
        if hook.conditions:
            who = caller.current()
            authz = celauthz.Authz(who.authorizer, who.user)
            request = _request(attrs, invocation, "")
            for field in ("uid", "object", "oldObject"):  # kube's CreateAdmissionRequest leaves them out
                request.pop(field, None)
            variables = {"object": invocation.obj, "oldObject": invocation.old, "request": request,
                         "authorizer": authz.variable(celauthz.RequestResource(
                             r.group, r.resource, attrs.subresource, attrs.namespace, attrs.name))}
            try:
                if not hk.conditions_match(hook, variables, {**library.FUNCTIONS, **authz.functions()}):
                    return None
            except hk.ConditionError as err:
                _failed(hook, attrs, str(err), 0)
                return None
        return invocation

    def _equivalents(self, resource: Resource, subresource: str) -> list[Resource]:
        """The other resources equivalent to (resource, subresource), kept until what is served changes."""
        registry = self._core.registry
        if self._equivalent_generation != registry.generation:
            self._equivalent_generation, self._equivalent = registry.generation, {}
        key = (resource.group, resource.version, resource.resource, subresource)
        found = self._equivalent.get(key)
        if found is None:
            found = self._equivalent[key] = [e for e in equivalent.equivalents(registry, resource, subresource)
                                             if e is not resource]
        return found

    def _matched(self, hook: hk.Hook, attrs: Attributes) -> Resource | None:
        """The resource a rule of the webhook matches: the request's own, or (Equivalent) an equivalent one."""
        r, sub = attrs.resource, attrs.subresource
        if hk.any_rule(hook, attrs.operation, hk.Target(r.group, r.version, r.resource, r.kind), sub,
                       attrs.namespace):
            return r
        if hook.match_policy != "Equivalent":
            return None
        others = self._equivalents(r, sub)
        for rule in hook.rules:
            for other in others:
                target = hk.Target(other.group, other.version, other.resource, other.kind)
                if hk.rule_matches(rule, attrs.operation, target, sub, attrs.namespace):
                    return other
        return None

    async def _namespace_matches(self, ctx: Context, hook: hk.Hook, attrs: Attributes) -> bool:
        selector = hook.namespace_selector
        if selector is None:
            return False
        if selector.empty:
            return True
        r = attrs.resource
        if r.group == "" and r.resource == "namespaces":
            return hk.selector_matches(selector, attrs.obj, attrs.old)
        if not r.namespaced:
            return True
        labels = await self._namespace_labels(ctx, attrs.namespace)
        if labels is None:
            _failed(hook, attrs, f'namespace "{attrs.namespace}" not found', 0)
            return False
        return selector.matches(labels)

    # --- the two plugins -------------------------------------------------------------------------------------

    async def mutate(self, ctx: Context, attrs: Attributes) -> None:
        version = 0  # how many times a webhook changed the object
        called: list[tuple[hk.Hook, int]] = []
        for hook in self.hooks(mutating=True):
            invocation = await self._should_call(ctx, hook, attrs)
            if invocation is not None:
                if await self._call(hook, attrs, invocation):
                    version += 1
                called.append((hook, version))
        for hook, seen in called:  # IfNeeded: once more when a later webhook changed the object after it
            if hook.reinvocation == "IfNeeded" and seen < version:
                invocation = await self._should_call(ctx, hook, attrs)
                if invocation is not None:
                    await self._call(hook, attrs, invocation)
        # A subresource's own kind: its REST checks it. An update's object is validated next, as kube's BeforeUpdate
        # follows its mutating admission.
        if version and attrs.obj is not None and attrs.kind is None and attrs.old is None:
            _revalidate(attrs)

    async def validate(self, ctx: Context, attrs: Attributes) -> None:
        chosen = []
        for hook in self.hooks(mutating=False):
            invocation = await self._should_call(ctx, hook, attrs)
            if invocation is not None:
                chosen.append((hook, invocation))
        if not chosen:
            return
        outcomes = await asyncio.gather(*(self._call(h, attrs, i) for h, i in chosen), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    # --- one call --------------------------------------------------------------------------------------------

    async def _call(self, hook: hk.Hook, attrs: Attributes, invocation: Invocation) -> bool:
        """Call the webhook: True when its patch changed the object. Raises its denial, or the failure
        policy's error."""
        if attrs.dry_run and hook.side_effects not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        review_version = hk.review_version(hook)
        if not review_version:
            _failed(hook, attrs, "webhook does not accept known AdmissionReview versions", 0)
            return False
        uid = str(uuid.uuid4())
        review = {"kind": "AdmissionReview", "apiVersion": f"admission.k8s.io/{review_version}",
                  "request": _request(attrs, invocation, uid)}
        started = time.monotonic()
        try:
            code, answer = await self.callouts.post(hook.client, json.dumps(review).encode(),
                                                    deadline.capped(hook.timeout))
        except CallError as err:
            _observe(hook, attrs, started, code=err.code, rejected=hook.failure_policy != "Ignore")
            _failed(hook, attrs, f"failed to call webhook: {err}", err.code)
            return False
        response, problem = _response(code, answer, review_version, uid)
        if problem:
            _observe(hook, attrs, started, code=code, rejected=hook.failure_policy != "Ignore")
            _failed(hook, attrs, problem, code)
            return False
        for warning in response.get("warnings") or []:
            if isinstance(warning, str) and warning.strip():
                attrs.warnings.append(warning)
        for key, value in (response.get("auditAnnotations") or {}).items():
            attrs.audit_annotations[f"{hook.name}/{key}"] = str(value)
        if not response.get("allowed"):
            denial = _denial(hook.name, response.get("status"))
            _observe(hook, attrs, started, code=denial.code, rejected=True, error_type="no_error")
            raise denial
        _observe(hook, attrs, started, code=code, rejected=False)
        patch = response.get("patch")
        if not hook.mutating or not patch or attrs.obj is None or invocation.obj is None:
            return False
        patched = _patched(hook, attrs, invocation, response, str(patch))
        if patched is None:
            return False
        if invocation.converted:  # the webhook saw another version: its result comes back to the request's
            patched = await equivalent.convert(patched, invocation.resource, attrs.resource)
        for key in ("kind", "apiVersion"):
            if key not in attrs.obj:
                patched.pop(key, None)
        if patched == attrs.obj:
            return False
        attrs.obj.clear()
        attrs.obj.update(patched)
        return True


@dataclass(frozen=True, slots=True)
class Invocation:
    """How one webhook sees the request: the resource its rule matched (the request's, or an equivalent one),
    the kind that resource's request carries, and the objects in that resource's form (`converted` when they
    were converted from the request's)."""

    resource: Resource
    kind: equivalent.Kind
    obj: Obj | None
    old: Obj | None
    converted: bool


async def _invocation(attrs: Attributes, matched: Resource) -> Invocation:
    kind = equivalent.kind_of(matched, attrs.subresource)
    if not equivalent.converts(attrs.resource, matched, attrs.subresource):
        return Invocation(matched, kind, _shown(kind, attrs.obj), _shown(kind, attrs.old), False)
    obj = None if attrs.obj is None else await equivalent.convert(attrs.obj, attrs.resource, matched)
    old = None if attrs.old is None else await equivalent.convert(attrs.old, attrs.resource, matched)
    return Invocation(matched, kind, obj, old, True)


def _request(attrs: Attributes, invocation: Invocation, uid: str) -> Obj:
    """AdmissionRequest: every field kube sends; kind and resource are what the webhook's rule matched,
    requestKind and requestResource the request's own."""
    r, m = attrs.resource, invocation.resource
    asked = equivalent.kind_of(r, attrs.subresource)
    request: Obj = {"uid": uid,
                    "kind": {"group": invocation.kind.group, "version": invocation.kind.version,
                             "kind": invocation.kind.kind},
                    "resource": {"group": m.group, "version": m.version, "resource": m.resource},
                    "requestKind": {"group": asked.group, "version": asked.version, "kind": asked.kind},
                    "requestResource": {"group": r.group, "version": r.version, "resource": r.resource},
                    "name": attrs.name, "namespace": attrs.namespace,
                    "operation": attrs.operation, "userInfo": caller.current().user.to_json(),
                    "object": invocation.obj, "oldObject": invocation.old,
                    "dryRun": attrs.dry_run, "options": attrs.options or None}
    if attrs.subresource:
        request["subResource"] = request["requestSubResource"] = attrs.subresource
    if not attrs.name:
        request.pop("name")
    if not attrs.namespace:
        request.pop("namespace")
    return request


def _shown(kind: equivalent.Kind, obj: Obj | None) -> Obj | None:
    if obj is None:
        return None
    return {"kind": kind.kind, "apiVersion": kind.api_version,
            **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}}


def _response(code: int, answer: bytes, version: str, uid: str) -> tuple[Obj, str]:
    """(AdmissionResponse, "") or ({}, kube's reason the answer is unusable)."""
    if code != 200:
        return {}, (f"failed to call webhook: the server responded with the status code {code} but did not "
                    "return more information")
    try:
        review = json.loads(answer)
    except ValueError as err:
        return {}, f"received invalid webhook response: {err}"
    if not isinstance(review, dict):
        return {}, "received invalid webhook response: not an AdmissionReview"
    expected = f"admission.k8s.io/{version}"
    if version == "v1" and (review.get("apiVersion") != expected or review.get("kind") != "AdmissionReview"):
        return {}, (f"received invalid webhook response: expected webhook response of {expected}, "
                    f"Kind=AdmissionReview, got {review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}")
    response = review.get("response")
    if not isinstance(response, dict):
        return {}, "received invalid webhook response: webhook response was absent"
    if version == "v1" and response.get("uid") != uid:
        return {}, (f"received invalid webhook response: expected response.uid=\"{uid}\", "
                    f"got \"{response.get('uid') or ''}\"")
    return response, ""


def _denial(name: str, status: Any) -> errors.ApiError:
    """kube's webhookerrors.ToStatusErr."""
    result = status if isinstance(status, dict) else {}
    given = result.get("code")
    code = max(given if isinstance(given, int) else 0, 400)
    denied = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        message = f"{denied}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied}: {result['reason']}"
    else:
        message = f"{denied} without explanation"
    return errors.ApiError(errors.status(code, str(result.get("reason") or ""), message, with_details=False))


def _failed(hook: hk.Hook, attrs: Attributes, reason: str, code: int) -> None:
    """A call that got no usable answer: ignored (failurePolicy Ignore) or kube's 500."""
    if hook.failure_policy == "Ignore":
        metrics.failed_open(hook.name, hook.kind)
        return
    raise errors.internal(f'failed calling webhook "{hook.name}": {reason}')


def _observe(hook: hk.Hook, attrs: Attributes, started: float, *, code: int, rejected: bool,
             error_type: str = "calling_webhook_error") -> None:
    metrics.observe(hook.name, hook.kind, attrs.operation, seconds=time.monotonic() - started,
                    rejected=rejected, code=code, error_type=error_type)


def _patched(hook: hk.Hook, attrs: Attributes, invocation: Invocation, response: Obj, patch: str) -> Obj | None:
    """A JSONPatch answer applied to the object the webhook saw, typed and pruned by the matched resource's
    schema; None when the answer is unusable and the failure policy ignores it."""
    if response.get("patchType") != "JSONPatch":
        _failed(hook, attrs, f"received invalid webhook response: unsupported patch type {response.get('patchType')!r}",
                200)
        return None
    try:
        operations = parse_json_patch(base64.b64decode(patch, validate=True), strict=False)
    except (binascii.Error, ValueError, errors.ApiError) as err:
        _failed(hook, attrs, f"received invalid webhook response: {err}", 200)
        return None
    assert invocation.obj is not None
    try:
        patched = json_patched(operations, invocation.obj)
    except JsonPatchFailed as err:
        raise errors.internal(str(err)) from None  # kube's NewInternalError of the patch library's error
    typed, _ = body.typed(attrs.kind or invocation.resource, patched, "Ignore")
    return typed


def _revalidate(attrs: Attributes) -> None:
    """The object webhooks changed, validated as the kind validates the write."""
    assert attrs.obj is not None
    if attrs.old is None:
        errs = validate.for_create(attrs.resource, attrs.obj)
    else:
        errs = validate.for_update(attrs.resource, attrs.obj, attrs.old, attrs.subresource)
    validate.raise_if_invalid(attrs.resource, attrs.obj, errs)
