"""Authenticating service account JWTs: kube's jwtTokenAuthenticator with the 1.28 serviceaccount validator.

A token is this authenticator's when it parses as a JWT whose `iss` is the configured issuer; anything else
(a static token, garbage, another issuer's JWT) is None, and the union answers 401 if no one knows it, as kube
does. Legacy secret-based tokens (issuer `kubernetes/serviceaccount`) are not accepted: nothing here issues
them (kube 1.28 no longer auto-generates them either), so a token claiming that issuer is not ours.

Ours, then checked in kube's order, each failure Unauthorized:
- the signature, by any verification key whose algorithm is the header's (RS256 for RSA keys, ES256/384/512
  by curve): `none`, HS* (an RSA public key used as an HMAC secret) and mismatches fail;
- exp and nbf with go-jose's one-minute leeway; `aud` must share one audience with the API audiences;
- the claims' ServiceAccount exists with the claimed uid (a deleted or recreated account's token fails), and
  is not deleted longer than the leeway ago; likewise the bound Pod or Secret when the token names one.
The lookups read indexes kept by watches (index.py); a miss is read from the core once, since a watch may
lag behind an object created a moment ago.

Caching (kube's token cache keeps a verified token's answer 10 s): what a token proves by itself, the signature,
audience and claims, is verified once and kept by a salted SHA-256 of the token (never the token) for VERIFIED_TTL
seconds; a token that can never become valid (malformed, badly signed, expired, for another audience) keeps its
refusal for FAILED_TTL seconds. Neither the clock nor the objects are cached: every request checks the time
window again and looks the ServiceAccount, Pod and Secret up in the indexes, so a token stops at once when it
expires or when what it names is deleted or recreated. A token not yet valid (nbf) is never cached.
"""

from __future__ import annotations

import calendar
import hashlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from server.auth.errors import Unauthorized
from server.auth.serviceaccounts import jws
from server.auth.serviceaccounts.index import Entry
from server.auth.serviceaccounts.keys import VerificationKey
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo, service_account_groups, service_account_username

log = logging.getLogger(__name__)

LEEWAY = 60  # seconds: go-jose's jwt.DefaultLeeway, which kube's validator uses
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
VERIFIED_TTL = 10.0  # seconds a verified token's claims are kept (kube's token success cache)
FAILED_TTL = 2.0  # seconds a token that can never be valid keeps its refusal
CACHE_SIZE = 4096  # tokens, verified and refused together; least recently used out

# (resource, namespace, name) -> the object's identity, None when it does not exist.
Lookup = Callable[[str, str, str], Awaitable[Entry | None]]
# The same from the indexes alone: None when they do not hold it (the Lookup then asks the core).
Peek = Callable[[str, str, str], Entry | None]


def _no_peek(resource: str, namespace: str, name: str) -> Entry | None:
    return None


def _deleted_before(entry: Entry, moment: float) -> bool:
    if not entry.deletion_timestamp:
        return False
    try:
        deleted = calendar.timegm(time.strptime(entry.deletion_timestamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return True
    return deleted < moment


def _ref(private: dict[str, Any], member: str) -> tuple[str, str] | None:
    value = private.get(member)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Unauthorized(f"service account token claim {member} is malformed")
    return str(value.get("name", "")), str(value.get("uid", ""))


@dataclass(frozen=True, slots=True)
class Verified:
    """What a token proves by itself, once its signature, audience and claims are checked: when it is valid, and
    what it names, for the checks every request makes."""

    window: jws.Window
    namespace: str
    account: tuple[str, str]  # (name, uid)
    secret: tuple[str, str] | None
    pod: tuple[str, str] | None
    user: UserInfo


@dataclass(frozen=True, slots=True)
class _Refused:
    why: str


class _Cache:
    """Verified tokens and refusals by a salted hash of the token, each until its deadline (monotonic)."""

    def __init__(self) -> None:
        # SHA-256 of a random per-process salt and the token: the key cannot be computed without the token, nor
        # precomputed across processes.
        self._salted = hashlib.sha256(os.urandom(32))
        self._entries: OrderedDict[bytes, tuple[float, Verified | _Refused]] = OrderedDict()

    def digest(self, token: str) -> bytes:
        hashed = self._salted.copy()
        hashed.update(token.encode())
        return hashed.digest()

    def get(self, digest: bytes, now: float) -> Verified | _Refused | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._entries[digest]
            return None
        self._entries.move_to_end(digest)
        return entry[1]

    def put(self, digest: bytes, value: Verified | _Refused, deadline: float) -> None:
        self._entries[digest] = (deadline, value)
        self._entries.move_to_end(digest)
        if len(self._entries) > CACHE_SIZE:
            self._entries.popitem(last=False)


class ServiceAccountAuthenticator:
    def __init__(self, *, issuer: str, keys: tuple[VerificationKey, ...], audiences: tuple[str, ...],
                 lookup: Lookup, peek: Peek = _no_peek) -> None:
        self._issuer = issuer
        self._keys = keys
        self._audiences = frozenset(audiences)
        self._lookup = lookup
        self._peek = peek
        self._cache = _Cache()

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        token = credentials.token
        if not token:
            return None
        digest = self._cache.digest(token)
        cached = self._cache.get(digest, time.monotonic())
        if cached is None:
            parsed = jws.parse(token)
            if parsed is None or parsed.claims.get("iss") != self._issuer:
                return None
            cached = self._verify(parsed, digest)
        if isinstance(cached, _Refused):
            raise Unauthorized(cached.why)
        now = time.time()
        if now >= cached.window.expires:
            raise Unauthorized("service account token has expired")
        if now < cached.window.not_before:
            raise Unauthorized("service account token is not valid yet")
        await self._check_objects(cached, now - LEEWAY)
        return cached.user

    def _verify(self, token: jws.Token, digest: bytes) -> Verified | _Refused:
        """The token's verification, cached unless its answer may change with time alone (not yet valid)."""
        try:
            verified = self._verified(token)
        except Unauthorized as err:
            refused = _Refused(err.why)
            self._cache.put(digest, refused, time.monotonic() + FAILED_TTL)
            return refused
        if time.time() >= verified.window.not_before:
            self._cache.put(digest, verified, time.monotonic() + VERIFIED_TTL)
        return verified

    def _verified(self, token: jws.Token) -> Verified:
        """Signature, time window (a token expired for good is refused), audience and the kubernetes.io claims."""
        header = token.header
        alg = header.get("alg")
        if "crit" in header:
            raise Unauthorized("service account token has critical headers this server does not understand")
        candidates = [k for k in self._keys if k.algorithm == alg]
        if not candidates:
            raise Unauthorized(f"service account token signed with an unaccepted algorithm {alg!r}")
        if not any(jws.verify(token, key.key, key.algorithm) for key in candidates):
            raise Unauthorized("service account token signature is invalid")
        claims = token.claims
        try:
            window = jws.window(claims, LEEWAY)
        except jws.Invalid as err:
            raise Unauthorized(str(err)) from None
        if time.time() >= window.expires:
            raise Unauthorized("service account token has expired")
        audiences = claims.get("aud")
        token_audiences = [audiences] if isinstance(audiences, str) else audiences
        if not isinstance(token_audiences, list) or not self._audiences.intersection(
                a for a in token_audiences if isinstance(a, str)):
            raise Unauthorized(f"token audiences {token_audiences!r} is invalid for the target audiences "
                               f"{sorted(self._audiences)!r}")
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            raise Unauthorized("service account token has no kubernetes.io claims")
        namespace = str(private.get("namespace", ""))
        account = _ref(private, "serviceaccount")
        if not namespace or account is None or not account[0]:
            raise Unauthorized("service account token names no service account")
        secret = _ref(private, "secret")
        pod = _ref(private, "pod")
        extra = ((POD_NAME_KEY, (pod[0],)), (POD_UID_KEY, (pod[1],))) if pod is not None else ()
        user = UserInfo(service_account_username(namespace, account[0]), account[1],
                        service_account_groups(namespace), extra)
        return Verified(window, namespace, account, secret, pod, user)

    async def _check_objects(self, token: Verified, deleted_before: float) -> None:
        """The ServiceAccount, and the bound Secret and Pod, exist now with the uids the token names: read from
        the indexes, an object they do not hold from the core."""
        namespace, peek = token.namespace, self._peek
        name = token.account[0]
        account = peek("serviceaccounts", namespace, name) or await self._lookup("serviceaccounts", namespace, name)
        if account is None:
            raise Unauthorized(f'serviceaccounts "{name}" not found')
        if _deleted_before(account, deleted_before):
            raise Unauthorized(f"service account {namespace}/{name} has been deleted")
        if account.uid != token.account[1]:
            raise Unauthorized(f"service account UID ({account.uid}) does not match claim ({token.account[1]})")
        for resource, ref in (("secrets", token.secret), ("pods", token.pod)):
            if ref is None:
                continue
            found = peek(resource, namespace, ref[0]) or await self._lookup(resource, namespace, ref[0])
            if found is None or _deleted_before(found, deleted_before):
                raise Unauthorized("service account token has been invalidated")
            if found.uid != ref[1]:
                raise Unauthorized(f"{resource[:-1]} UID ({found.uid}) does not match service account "
                                   f"{resource[:-1]} ref claim ({ref[1]})")
