"""Webhook token authentication and webhook authorization (kube-apiserver's
--authentication-token-webhook-config-file and --authorization-webhook-config-file): a remote service, named by
a kubeconfig, answers a TokenReview or a SubjectAccessReview that the server POSTs to it.

Contract, as kube's webhook authenticator and authorizer (k8s.io/apiserver/plugin/pkg/.../webhook):
- The kubeconfig's current context (else its only cluster and user) names the `server` URL, the CA that
  verifies it (`certificate-authority` or `-data`; the system roots when absent) and the client certificate
  and key (`client-certificate`/`client-key`, or their `-data`) or bearer `token` presented to it. Relative
  file paths are relative to the kubeconfig's directory. The calls go through server/callouts (one session per
  configuration, per-call deadlines, on the event loop).
- `version` is v1 or v1beta1 (authentication.k8s.io / authorization.k8s.io; v1beta1's SubjectAccessReview
  names the groups `group`).
- Authentication: `status.authenticated` true is the user of `status.user`; false is no user (the union answers
  401 when nobody else knows the token); a failed call, a non-2xx answer or an answer that is no review is a
  401. Answers, successes and refusals alike, are cached `cache_ttl` seconds (kube's default 2m) by a salted
  hash of the token; failed calls are not cached, so a webhook that comes back is asked at once.
- Authorization: `status.allowed` is ALLOW, else `status.denied` is DENY, else NO_OPINION (the next mode is
  asked); a failed call is NO_OPINION with the failure as reason. ALLOW is cached `authorized_ttl` (5m) and
  the others `unauthorized_ttl` (30s), by the review's spec; failed calls are not cached.
- The request path awaits the webhook (`decide`). The synchronous `authorize`, which checks made while a verb
  runs use (RBAC escalation, CEL's authorizer), answers from the cache and otherwise has no opinion.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import orjson

from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import Rules
from server.auth.errors import Unauthorized
from server.callouts.client import CallError, Callouts, ClientConfig
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo

TIMEOUT = 30.0  # seconds a call may take (kube's webhook client default)
CACHE_SIZE = 4096
VERSIONS = ("v1", "v1beta1")


class WebhookConfigError(ValueError):
    """The kubeconfig cannot configure a webhook: the command exits with it."""


def _read(base: Path, data: Any, file: Any) -> bytes:
    if data:
        return base64.b64decode(str(data))
    if file:
        path = Path(str(file))
        return (path if path.is_absolute() else base / path).read_bytes()
    return b""


def load_kubeconfig(path: Path) -> ClientConfig:
    """The webhook's ClientConfig from a kubeconfig (WebhookConfigError when it names no usable server)."""
    import yaml

    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise WebhookConfigError(f"invalid webhook kubeconfig {path}: {err}") from None
    if not isinstance(document, dict):
        raise WebhookConfigError(f"invalid webhook kubeconfig {path}: not a kubeconfig")

    def named(section: str, name: str | None) -> dict[str, Any]:
        entries = [e for e in document.get(section) or [] if isinstance(e, dict)]
        if name is not None:
            entries = [e for e in entries if e.get("name") == name]
        if len(entries) != 1:
            return {}
        value = entries[0].get(section[:-1])
        return value if isinstance(value, dict) else {}

    context = named("contexts", str(document["current-context"])) if document.get("current-context") else {}
    cluster = named("clusters", context.get("cluster"))
    user = named("users", context.get("user")) if document.get("users") else {}
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        raise WebhookConfigError(f"invalid webhook kubeconfig {path}: no cluster server URL")
    base = path.parent
    try:
        return ClientConfig(
            url=server,
            ca_bundle=_read(base, cluster.get("certificate-authority-data"), cluster.get("certificate-authority")),
            client_cert=_read(base, user.get("client-certificate-data"), user.get("client-certificate")),
            client_key=_read(base, user.get("client-key-data"), user.get("client-key")),
            token=str(user.get("token") or ""))
    except (OSError, ValueError) as err:
        raise WebhookConfigError(f"invalid webhook kubeconfig {path}: {err}") from None


class _Cache:
    """Answers by a key, each until its deadline (monotonic), least recently used out."""

    def __init__(self) -> None:
        self._entries: OrderedDict[bytes, tuple[float, Any]] = OrderedDict()

    def get(self, key: bytes) -> tuple[bool, Any]:
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        if entry[0] <= time.monotonic():
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, entry[1]

    def put(self, key: bytes, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = (time.monotonic() + ttl, value)
        self._entries.move_to_end(key)
        if len(self._entries) > CACHE_SIZE:
            self._entries.popitem(last=False)


def _review(body: bytes, kind: str) -> dict[str, Any]:
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError:
        review = None
    if not isinstance(review, dict) or review.get("kind") != kind:
        raise CallError(f"the webhook's answer is not a {kind}")
    status = review.get("status")
    return status if isinstance(status, dict) else {}


class WebhookTokenAuthenticator:
    def __init__(self, callouts: Callouts, config: ClientConfig, *, version: str = "v1", cache_ttl: float = 120.0,
                 audiences: tuple[str, ...] = ()) -> None:
        self._callouts = callouts
        self._config = config
        self._api_version = f"authentication.k8s.io/{version}"
        self._ttl = cache_ttl
        self._audiences = audiences
        self._salted = hashlib.sha256(os.urandom(32))
        self._cache = _Cache()

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        token = credentials.token
        if not token:
            return None
        hashed = self._salted.copy()
        hashed.update(token.encode())
        key = hashed.digest()
        found, user = self._cache.get(key)
        if not found:
            user = await self._ask(token)
            self._cache.put(key, user, self._ttl)
        return user if isinstance(user, UserInfo) else None

    async def _ask(self, token: str) -> UserInfo | None:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = orjson.dumps({"apiVersion": self._api_version, "kind": "TokenReview", "metadata": {}, "spec": spec})
        try:
            code, answer = await self._callouts.post(self._config, body, TIMEOUT)
            if not 200 <= code < 300:
                raise CallError(f"the token webhook answered {code}", code)
            status = _review(answer, "TokenReview")
        except CallError as err:
            raise Unauthorized(f"token webhook: {err}") from None
        if not status.get("authenticated"):
            return None
        audiences = status.get("audiences")
        if self._audiences and isinstance(audiences, list) and audiences and \
                not set(self._audiences).intersection(audiences):
            raise Unauthorized("token webhook: token audiences is invalid for the target audiences")
        raw = status.get("user") if isinstance(status.get("user"), dict) else {}
        assert isinstance(raw, dict)
        extra = raw.get("extra") if isinstance(raw.get("extra"), dict) else {}
        assert isinstance(extra, dict)
        return UserInfo(str(raw.get("username") or ""), str(raw.get("uid") or ""),
                        tuple(str(g) for g in raw.get("groups") or ()),
                        tuple(sorted((str(k), tuple(str(v) for v in values or ())) for k, values in extra.items())))


class WebhookAuthorizer:
    def __init__(self, callouts: Callouts, config: ClientConfig, *, version: str = "v1",
                 authorized_ttl: float = 300.0, unauthorized_ttl: float = 30.0) -> None:
        self._callouts = callouts
        self._config = config
        self._version = version
        self._authorized_ttl = authorized_ttl
        self._unauthorized_ttl = unauthorized_ttl
        self._cache = _Cache()

    def _spec(self, attributes: Attributes) -> dict[str, Any]:
        user = attributes.user
        spec: dict[str, Any] = {"user": user.name}
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups" if self._version == "v1" else "group"] = list(user.groups)
        if user.extra:
            spec["extra"] = user.extra_dict()
        if attributes.resource_request:
            resource = {"namespace": attributes.namespace, "verb": attributes.verb, "group": attributes.api_group,
                        "version": attributes.api_version, "resource": attributes.resource,
                        "subresource": attributes.subresource, "name": attributes.name}
            spec["resourceAttributes"] = {k: v for k, v in resource.items() if v}
        else:
            spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
        return spec

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        found, answer = self._cache.get(orjson.dumps(self._spec(attributes), option=orjson.OPT_SORT_KEYS))
        if found:
            decision, reason = answer
            return decision, reason
        return Decision.NO_OPINION, "the authorization webhook is asked on the request path only"

    async def decide(self, attributes: Attributes) -> tuple[Decision, str]:
        spec = self._spec(attributes)
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        found, answer = self._cache.get(key)
        if found:
            decision, reason = answer
            return decision, reason
        body = orjson.dumps({"apiVersion": f"authorization.k8s.io/{self._version}", "kind": "SubjectAccessReview",
                             "metadata": {}, "spec": spec})
        try:
            code, raw = await self._callouts.post(self._config, body, TIMEOUT)
            if not 200 <= code < 300:
                raise CallError(f"the authorization webhook answered {code}", code)
            status = _review(raw, "SubjectAccessReview")
        except CallError as err:
            return Decision.NO_OPINION, f"authorization webhook: {err}"
        reason = str(status.get("reason") or "")
        if status.get("allowed"):
            result = (Decision.ALLOW, reason)
            self._cache.put(key, result, self._authorized_ttl)
        else:
            result = (Decision.DENY if status.get("denied") else Decision.NO_OPINION, reason)
            self._cache.put(key, result, self._unauthorized_ttl)
        return result

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules(incomplete=True, evaluation_error="webhook authorizer does not support user rule resolution")
