"""The review APIs' answers: what the authorizer and the authenticators say, asked through the API itself
(kube's pkg/registry/authorization/* and pkg/registry/authentication/* REST Create).

Each answer is a Resource's `answer_create` (server/registry/resources.py): it gets the typed request body and answers
the object the client gets back with 201 Created; nothing is stored. It runs as the call's caller
(caller.current()): the user the guard authenticated (impersonation applied) and the authorizer that admitted
the call, so what a review says is what the request path does.

- SubjectAccessReview / LocalSubjectAccessReview: the spec's user, groups, extra and uid are the subject;
  SelfSubjectAccessReview: the caller is. The spec echoes back with status.allowed/denied/reason.
- SelfSubjectRulesReview: the authorizer's rules_for the caller in spec.namespace, in a new object (kube answers
  an empty spec).
- TokenReview: spec.token authenticated by the server's authenticators, as a bearer token alone.
- SelfSubjectReview: the caller's user, in a new object stamped with the time.
Validation is kube's (pkg/apis/authorization/validation): 422 against the kind "" of authorization.k8s.io,
because kube's decoded internal object carries no kind, e.g.
`.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified`.
"""

from __future__ import annotations

from typing import Any

from server.auth import caller
from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import decide
from server.auth.errors import Unauthorized
from server.machinery import errors, meta
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.registry.resources import Resource

AUTHORIZATION_GROUP = "authorization.k8s.io"


def _go_string_map(value: Any) -> str:
    if not value:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{names.go_quote(k)}:{names.go_quote(str(v))}"
                                             for k, v in sorted(value.items())) + "}"


def _go_strings(value: Any) -> str:
    if not value:
        return "[]string(nil)"
    return "[]string{" + ", ".join(names.go_quote(str(v)) for v in value) + "}"


def _go_object_meta(m: Obj) -> GoValue:
    """%#v of a metav1.ObjectMeta, as field.Invalid prints the `must be empty` metadata (owner references and
    managed fields, which Go prints with pointer addresses, as nil)."""
    text = ", ".join((
        *(f"{field}:{names.go_quote(str(m.get(key) or ''))}" for field, key in (
            ("Name", "name"), ("GenerateName", "generateName"), ("Namespace", "namespace"),
            ("SelfLink", "selfLink"), ("UID", "uid"), ("ResourceVersion", "resourceVersion"))),
        f"Generation:{int(m.get('generation') or 0)}",
        "CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)",
        "DeletionTimestamp:<nil>", "DeletionGracePeriodSeconds:(*int64)(nil)",
        f"Labels:{_go_string_map(m.get('labels'))}", f"Annotations:{_go_string_map(m.get('annotations'))}",
        "OwnerReferences:[]v1.OwnerReference(nil)", f"Finalizers:{_go_strings(m.get('finalizers'))}",
        "ManagedFields:[]v1.ManagedFieldsEntry(nil)"))
    return GoValue("v1.ObjectMeta{" + text + "}")


def _go_non_resource(attrs: Obj) -> GoValue:
    return GoValue(f"authorization.NonResourceAttributes{{Path:{names.go_quote(str(attrs.get('path', '')))}, "
                   f"Verb:{names.go_quote(str(attrs.get('verb', '')))}}}")


def _spec_errors(spec: Obj, *, subject: bool) -> list[FieldError]:
    """ValidateSubjectAccessReviewSpec (subject) / ValidateSelfSubjectAccessReviewSpec."""
    errs: list[FieldError] = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        errs.append(FieldError.invalid("spec.nonResourceAttributes", _go_non_resource(_dict(non_resource)),
                                       "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        errs.append(FieldError.invalid("spec.resourceAttributes", "null",
                                       "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if subject and not spec.get("user") and not spec.get("groups"):
        errs.append(FieldError.invalid("spec.user", str(spec.get("user") or ""),
                                       "at least one of user or group must be specified"))
    return errs


def _unmanaged_meta(obj: Obj, *keep: str) -> Obj:
    """The metadata a review may not carry: all of it but managedFields (and `keep`)."""
    return {k: v for k, v in _dict(obj.get("metadata")).items()
            if k not in ("managedFields", *keep) and v not in (None, "", {}, [], 0)}


def _raise_if_invalid(errs: list[FieldError]) -> None:
    if errs:
        causes = [errors.Cause(c["reason"], c.get("message", ""), c.get("field", ""))
                  for c in (e.cause() for e in errs)]
        raise errors.invalid("", AUTHORIZATION_GROUP, "", names.join_errors(errs), causes)


def _attributes(user: UserInfo, spec: Obj) -> Attributes:
    """kube's ResourceAttributesFrom / NonResourceAttributesFrom."""
    resource = spec.get("resourceAttributes")
    if resource is not None:
        r = _dict(resource)
        return Attributes(user, str(r.get("verb", "")), api_group=str(r.get("group", "")),
                          api_version=str(r.get("version", "")), resource=str(r.get("resource", "")),
                          subresource=str(r.get("subresource", "")), namespace=str(r.get("namespace", "")),
                          name=str(r.get("name", "")))
    n = _dict(spec.get("nonResourceAttributes"))
    return Attributes(user, str(n.get("verb", "")), resource_request=False, path=str(n.get("path", "")))


async def _decide(obj: Obj, user: UserInfo) -> Obj:
    spec = _dict(obj.get("spec"))
    decision, reason = await decide(caller.current().authorizer, _attributes(user, spec))
    status: Obj = {"allowed": decision is Decision.ALLOW}
    if decision is Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    obj["status"] = status
    return obj


def _subject(spec: Obj) -> UserInfo:
    extra = tuple((str(k), tuple(str(v) for v in (values or ())))
                  for k, values in sorted(_dict(spec.get("extra")).items()))
    return UserInfo(str(spec.get("user") or ""), str(spec.get("uid") or ""),
                    tuple(str(g) for g in spec.get("groups") or ()), extra)


async def subject_access_review(ctx: Any, resource: Resource, obj: Obj) -> Obj:
    spec = _dict(obj.get("spec"))
    errs = _spec_errors(spec, subject=True)
    if _unmanaged_meta(obj):
        errs.append(FieldError.invalid("metadata", _go_object_meta(_dict(obj.get("metadata"))), "must be empty"))
    _raise_if_invalid(errs)
    return await _decide(obj, _subject(spec))


async def local_subject_access_review(ctx: Any, resource: Resource, obj: Obj) -> Obj:
    """The namespace is the path's (placed in metadata before this runs), and the resource's must be it."""
    spec = _dict(obj.get("spec"))
    namespace = str(_dict(obj.get("metadata")).get("namespace") or "")
    errs = _spec_errors(spec, subject=True)
    if _unmanaged_meta(obj, "namespace"):
        errs.append(FieldError.invalid("metadata", _go_object_meta(_dict(obj.get("metadata"))),
                                       "must be empty except for namespace"))
    resource_attributes = spec.get("resourceAttributes")
    if resource_attributes is not None and str(_dict(resource_attributes).get("namespace", "")) != namespace:
        errs.append(FieldError.invalid("spec.resourceAttributes.namespace",
                                       str(_dict(resource_attributes).get("namespace", "")),
                                       "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        errs.append(FieldError.invalid("spec.nonResourceAttributes", _go_non_resource(_dict(
            spec["nonResourceAttributes"])), "disallowed on this kind of request"))
    _raise_if_invalid(errs)
    return await _decide(obj, _subject(spec))


async def self_subject_access_review(ctx: Any, resource: Resource, obj: Obj) -> Obj:
    spec = _dict(obj.get("spec"))
    errs = _spec_errors(spec, subject=False)
    if _unmanaged_meta(obj):
        errs.append(FieldError.invalid("metadata", _go_object_meta(_dict(obj.get("metadata"))), "must be empty"))
    _raise_if_invalid(errs)
    return await _decide(obj, caller.current().user)


def _words(values: tuple[str, ...], key: str) -> Obj:
    return {key: list(values)} if values else {}


async def self_subject_rules_review(ctx: Any, resource: Resource, obj: Obj) -> Obj:
    namespace = str(_dict(obj.get("spec")).get("namespace") or "")
    if not namespace:
        raise errors.bad_request("no namespace on request")
    who = caller.current()
    rules = who.authorizer.rules_for(who.user, namespace)
    status: Obj = {
        "resourceRules": [{"verbs": list(r.verbs), **_words(r.api_groups, "apiGroups"),
                           **_words(r.resources, "resources"), **_words(r.resource_names, "resourceNames")}
                          for r in rules.resource_rules],
        "nonResourceRules": [{"verbs": list(r.verbs), **_words(r.non_resource_urls, "nonResourceURLs")}
                             for r in rules.non_resource_rules],
        "incomplete": rules.incomplete,
    }
    if rules.evaluation_error:
        status["evaluationError"] = rules.evaluation_error
    return {"metadata": {}, "spec": {}, "status": status}


async def token_review(ctx: Any, resource: Resource, obj: Obj) -> Obj:
    """spec.token as the only credential of a request (kube's fake request with just the Authorization header).

    Audiences: the token must be good for spec.audiences (the API audiences when empty); status.audiences are
    those it is good for. The authenticators accept tokens for the API audiences, so wanted audiences outside
    them authenticate nobody.
    """
    spec = _dict(obj.get("spec"))
    token = str(spec.get("token") or "")
    if not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    who = caller.current()
    if who.authenticator is None:
        return obj
    wanted = [str(a) for a in spec.get("audiences") or who.audiences]
    accepted = [a for a in wanted if a in who.audiences] if who.audiences else wanted
    status: Obj = {}
    if wanted and not accepted:
        status["user"] = {}
        status["error"] = "invalid bearer token"
        obj["status"] = status
        return obj
    try:
        user = await who.authenticator.authenticate(Credentials(token=token))
    except Unauthorized as err:
        status["user"] = {}
        status["error"] = err.why
    else:
        status = {"authenticated": True, "user": user.to_json(), **({"audiences": accepted} if accepted else {})}
    obj["status"] = status
    return obj


async def self_subject_review(ctx: Any, resource: Resource, obj: Obj) -> Obj:
    return {"metadata": {"creationTimestamp": meta.now()}, "status": {"userInfo": caller.current().user.to_json()}}
