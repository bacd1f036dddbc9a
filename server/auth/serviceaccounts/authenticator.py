"""Authenticating service account JWTs: kube's jwtTokenAuthenticator with the 1.28 serviceaccount validator.

A token is this authenticator's when it parses as a JWT whose `iss` is the configured issuer; anything else
(a static token, garbage, another issuer's JWT) is None, and the union answers 401 if no one knows it, as kube
does. A token whose `iss` is `kubernetes/serviceaccount` is a secret-based one (legacy.py), checked as kube's
legacy validator checks it (below).

Ours, then checked in kube's order, each failure Unauthorized:
- the signature, by any verification key whose algorithm is the header's (RS256 for RSA keys, ES256/384/512
  by curve): `none`, HS* (an RSA public key used as an HMAC secret) and mismatches fail;
- exp and nbf with go-jose's one-minute leeway; `aud` must share one audience with the API audiences;
- the claims' ServiceAccount exists with the claimed uid (a deleted or recreated account's token fails), and
  is not deleted longer than the leeway ago; likewise the bound Pod or Secret when the token names one.
The lookups read indexes kept by watches (index.py); a miss is read from the core once, since a watch may
lag behind an object created a moment ago.

A secret-based token: the signature as above; no time window (it never expires); an `aud`, if it has one, must
share an audience with the API audiences (none: the API audiences); the claims as legacy.claims_of reads them.
Then, on every request: the Secret it names exists, is not being deleted and holds exactly this token; the
ServiceAccount exists, is not being deleted and has the uid the token names. A token that passes has its
Secret's `kubernetes.io/legacy-token-last-used` label set to today (UTC) unless it says today or tomorrow
already, by the `mark_used` callback, as kube's validator patches it.

Caching (kube's token cache keeps a verified token's answer 10 s): what a token proves by itself, the signature,
audience and claims, is verified once and kept by a salted SHA-256 of the token (never the token) for VERIFIED_TTL
seconds; a token that can never become valid (malformed, badly signed, expired, for another audience) keeps its
refusal for FAILED_TTL seconds. Neither the clock nor the objects are cached: every request checks the time
window again and looks the ServiceAccount, Pod and Secret up in the indexes, so a token stops at once when it
expires or when what it names is deleted or recreated. A token not yet valid (nbf) is never cached.
"""

from __future__ import annotations

import calendar
import datetime
import hashlib
import hmac
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from server.auth.errors import Unauthorized
from server.auth.serviceaccounts import jws, legacy
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
class LegacyVerified:
    """A secret-based token whose signature and claims are checked: what every request checks it against."""

    claims: legacy.Claims
    token: bytes  # legacy.digest of the token, compared with the Secret's
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
        self._entries: OrderedDict[bytes, tuple[float, Verified | LegacyVerified | _Refused]] = OrderedDict()

    def digest(self, token: str) -> bytes:
        hashed = self._salted.copy()
        hashed.update(token.encode())
        return hashed.digest()

    def get(self, digest: bytes, now: float) -> Verified | LegacyVerified | _Refused | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._entries[digest]
            return None
        self._entries.move_to_end(digest)
        return entry[1]

    def put(self, digest: bytes, value: Verified | LegacyVerified | _Refused, deadline: float) -> None:
        self._entries[digest] = (deadline, value)
        self._entries.move_to_end(digest)
        if len(self._entries) > CACHE_SIZE:
            self._entries.popitem(last=False)


class ServiceAccountAuthenticator:
    def __init__(self, *, issuer: str, keys: tuple[VerificationKey, ...], audiences: tuple[str, ...],
                 lookup: Lookup, peek: Peek = _no_peek,
                 mark_used: Callable[[str, str], None] | None = None) -> None:
        """mark_used(namespace, secret): label the Secret of a secret-based token used today (no label: None)."""
        self._issuer = issuer
        self._mark_used = mark_used
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
            if parsed is None:
                return None
            issuer = parsed.claims.get("iss")
            if issuer == self._issuer:
                cached = self._verify(parsed, digest)
            elif issuer == legacy.ISSUER:
                cached = self._verify_legacy(parsed, token, digest)
            else:
                return None
        if isinstance(cached, _Refused):
            raise Unauthorized(cached.why)
        if isinstance(cached, LegacyVerified):
            await self._check_legacy(cached)
            return cached.user
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

    def _verify_legacy(self, token: jws.Token, text: str, digest: bytes) -> LegacyVerified | _Refused:
        """A secret-based token's signature, audience and claims, cached as a bound token's are."""
        answer: LegacyVerified | _Refused
        try:
            self._signed(token)
            claims = token.claims
            audiences = claims.get("aud")
            if audiences is not None and audiences != []:  # none: the API audiences (kube's implicit ones)
                self._audience(audiences)
            checked = legacy.claims_of(claims)
        except Unauthorized as err:
            answer = _Refused(err.why)
        except legacy.Refused as err:
            answer = _Refused(str(err))
        else:
            user = UserInfo(service_account_username(checked.namespace, checked.account), checked.account_uid,
                            service_account_groups(checked.namespace))
            answer = LegacyVerified(checked, legacy.digest(text.encode()), user)
        ttl = FAILED_TTL if isinstance(answer, _Refused) else VERIFIED_TTL
        self._cache.put(digest, answer, time.monotonic() + ttl)
        return answer

    def _signed(self, token: jws.Token) -> None:
        """Unauthorized unless a verification key of the header's algorithm signed the token."""
        header = token.header
        alg = header.get("alg")
        if "crit" in header:
            raise Unauthorized("service account token has critical headers this server does not understand")
        candidates = [k for k in self._keys if k.algorithm == alg]
        if not candidates:
            raise Unauthorized(f"service account token signed with an unaccepted algorithm {alg!r}")
        if not any(jws.verify(token, key.key, key.algorithm) for key in candidates):
            raise Unauthorized("service account token signature is invalid")

    def _audience(self, audiences: Any) -> None:
        """Unauthorized unless the token's `aud` shares an audience with the API audiences."""
        token_audiences = [audiences] if isinstance(audiences, str) else audiences
        if not isinstance(token_audiences, list) or not self._audiences.intersection(
                a for a in token_audiences if isinstance(a, str)):
            raise Unauthorized(f"token audiences {token_audiences!r} is invalid for the target audiences "
                               f"{sorted(self._audiences)!r}")

    async def _check_legacy(self, token: LegacyVerified) -> None:
        """The legacy validator's lookups, in its order, then the last-used label."""
        claims, peek = token.claims, self._peek
        namespace = claims.namespace
        secret = peek("secrets", namespace, claims.secret) or await self._lookup("secrets", namespace, claims.secret)
        if secret is None or secret.deletion_timestamp:
            raise Unauthorized("Token has been invalidated")
        if not secret.token or not hmac.compare_digest(secret.token, token.token):
            raise Unauthorized("Token does not match server's copy")
        name = claims.account
        account = peek("serviceaccounts", namespace, name) or await self._lookup("serviceaccounts", namespace, name)
        if account is None:
            raise Unauthorized(f'serviceaccounts "{name}" not found')
        if account.deletion_timestamp:
            raise Unauthorized(f"ServiceAccount {namespace}/{name} has been deleted")
        if account.uid != claims.account_uid:
            raise Unauthorized(f"ServiceAccount UID ({account.uid}) does not match claim ({claims.account_uid})")
        if self._mark_used is not None:
            now = datetime.datetime.now(datetime.UTC)
            today = now.strftime("%Y-%m-%d")
            if secret.last_used not in (today, (now + datetime.timedelta(days=1)).strftime("%Y-%m-%d")):
                self._mark_used(namespace, claims.secret)

    def _verified(self, token: jws.Token) -> Verified:
        """Signature, time window (a token expired for good is refused), audience and the kubernetes.io claims."""
        self._signed(token)
        claims = token.claims
        try:
            window = jws.window(claims, LEEWAY)
        except jws.Invalid as err:
            raise Unauthorized(str(err)) from None
        if time.time() >= window.expires:
            raise Unauthorized("service account token has expired")
        self._audience(claims.get("aud"))
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
