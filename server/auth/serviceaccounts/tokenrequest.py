"""POST serviceaccounts/{name}/token: kube's TokenREST.Create (authentication.k8s.io/v1 TokenRequest).

Answers 201 with the request, its status holding the token and its expirationTimestamp. In kube's order:
- metadata.name / metadata.namespace, when set, must be the URL's (422 "must match the service account ...");
- the ServiceAccount must exist (404);
- spec.audiences defaults to the API audiences, spec.expirationSeconds to 3600 (SetDefaults_TokenRequestSpec);
  at least 600 and at most 2^32 (ValidateTokenRequest; 422 TokenRequest.authentication.k8s.io "" is invalid);
- spec.boundObjectRef names a Pod (running as this account: else 400) or a Secret in the namespace, which
  must exist (404) with the given uid if one is given (409 Conflict); any other kind is 400.
Admission sees the request (a CREATE of serviceaccounts/token whose object is the TokenRequest) before the
ServiceAccount is read, as kube's handler admits it before TokenREST.Create: webhooks that match
`serviceaccounts/token`, and NodeRestriction, which binds a node's tokens to its own Pods.
Nothing is stored; dryRun is refused by the registry's options as for any create.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from capstan.api.authentication.v1 import authentication_pb2 as authentication_v1
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.serviceaccounts.issuer import Account, ObjectRef, TokenIssuer
from server.machinery import errors, meta
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.objects import body, options, render
from server.objects.admitting import Attributes, admit
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource, Subresource

GROUP = "authentication.k8s.io"
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2**32

TOKEN = Subresource("token", "TokenRequest", ("create",), group=GROUP, version="v1",
                    proto_message="k8s.io.api.authentication.v1.TokenRequest")
TOKEN_REQUEST_KIND = Resource(group=GROUP, version="v1", resource="tokenrequests", kind="TokenRequest",
                              singular="tokenrequest", namespaced=True,
                              schema=ProtoSchema(authentication_v1.TokenRequest), verbs=("create",))

Handler = Callable[[Context, Resource, core_pb2.CreateRequest], Awaitable[core_pb2.CreateResponse]]


def _invalid(name: str, problems: list[FieldError]) -> errors.ApiError:
    causes = [errors.Cause(c["reason"], c.get("message", ""), c.get("field", ""))
              for c in (p.cause() for p in problems)]
    return errors.invalid("TokenRequest", GROUP, name, names.join_errors(problems), causes)


async def _read(ctx: Context, resource: str, namespace: str, name: str) -> Obj:
    served = ctx.registry.get("", "v1", resource)
    if served is None:
        raise errors.not_found(resource, "", name)
    got = await store_call(ctx.store.get(served.key(namespace, name)))
    if got.kv is None:
        raise errors.not_found(resource, "", name)
    return render.load(got.kv.value)


def _validate(spec: dict[str, Any]) -> list[FieldError]:
    seconds = spec["expirationSeconds"]
    problems = []
    if seconds < MIN_EXPIRATION:
        problems.append(FieldError.invalid("spec.expirationSeconds", seconds,
                                           "may not specify a duration less than 10 minutes"))
    if seconds > MAX_EXPIRATION:
        problems.append(FieldError.invalid("spec.expirationSeconds", seconds,
                                           "may not specify a duration larger than 2^32 seconds"))
    return problems


async def _bound(ctx: Context, namespace: str, account: str, ref: dict[str, Any]
                 ) -> tuple[ObjectRef | None, ObjectRef | None]:
    """(pod, secret) the token is bound to."""
    api_version, kind, name = str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(ref.get("name", ""))
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    if group == "" and kind == "Pod":
        obj = await _read(ctx, "pods", namespace, name)
        if (obj.get("spec") or {}).get("serviceAccountName", "") != account:
            raise errors.bad_request(f"cannot bind token for serviceaccount {names.go_quote(account)} to pod running "
                                     "with different serviceaccount name.")
    elif group == "" and kind == "Secret":
        obj = await _read(ctx, "secrets", namespace, name)
    else:
        version = api_version.rpartition("/")[2]
        raise errors.bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}"
                                 if group else f"cannot bind token to object of type /{version}, Kind={kind}")
    uid = str(meta.meta(obj).get("uid", ""))
    if ref.get("uid") and ref["uid"] != uid:
        raise errors.conflict(kind, group, name, (
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. The object "
            "might have been deleted and then recreated"))
    found = ObjectRef(name, uid)
    return (found, None) if kind == "Pod" else (None, found)


def handler(issuer: TokenIssuer) -> Handler:
    async def create_token(ctx: Context, resource: Resource, req: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
        dry_run = options.dry_run(req.options.dryRun, "CreateOptions")
        request, warnings = body.decode(TOKEN_REQUEST_KIND, req.object,
                                        options.field_validation(req.options.fieldValidation, "CreateOptions"))
        namespace, name = req.path.namespace, req.path.name
        m = request.setdefault("metadata", {})
        if m.get("name") and m["name"] != name:
            raise _invalid(name, [FieldError.invalid("metadata.name", m["name"],
                                                     "must match the service account name if specified")])
        if m.get("namespace") and m["namespace"] != namespace:
            raise _invalid(name, [FieldError.invalid("metadata.namespace", m["namespace"],
                                                     "must match the service account namespace if specified")])
        await admit(ctx, Attributes(resource, "CREATE", name, namespace, request, None, dry_run, subresource="token",
                                    kind=TOKEN_REQUEST_KIND, warnings=warnings))
        account = await _read(ctx, "serviceaccounts", namespace, name)
        spec = request.setdefault("spec", {})
        if not spec.get("audiences"):
            spec["audiences"] = list(issuer.audiences)
        spec.setdefault("expirationSeconds", DEFAULT_EXPIRATION)
        m.update(name=name, namespace=namespace, creationTimestamp=meta.now())
        request.pop("status", None)
        problems = _validate(spec)
        if problems:
            raise _invalid("", problems)
        pod = secret = None
        if spec.get("boundObjectRef") is not None:
            pod, secret = await _bound(ctx, namespace, name, spec["boundObjectRef"])
        issued = issuer.issue(Account(namespace, name, str(meta.meta(account).get("uid", ""))),
                              audiences=tuple(spec["audiences"]), expiration_seconds=int(spec["expirationSeconds"]),
                              pod=pod, secret=secret)
        request["status"] = {"token": issued.token, "expirationTimestamp": _rfc3339(issued.expires)}
        return core_pb2.CreateResponse(object=render.raw_unstored(TOKEN_REQUEST_KIND, request, req.accept),
                                       warnings=warnings)

    return create_token


def _rfc3339(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
