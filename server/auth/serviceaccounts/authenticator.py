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
"""

from __future__ import annotations

import calendar
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import jwt

from server.auth.errors import Unauthorized
from server.auth.serviceaccounts.index import Entry
from server.auth.serviceaccounts.keys import VerificationKey
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo, service_account_groups, service_account_username

log = logging.getLogger(__name__)

LEEWAY = 60  # seconds: go-jose's jwt.DefaultLeeway, which kube's validator uses
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"

# (resource, namespace, name) -> the object's identity, None when it does not exist.
Lookup = Callable[[str, str, str], Awaitable[Entry | None]]


def _unverified_issuer(token: str) -> str | None:
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except (jwt.PyJWTError, ValueError):
        return None
    issuer = claims.get("iss")
    return issuer if isinstance(issuer, str) else None


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


class ServiceAccountAuthenticator:
    def __init__(self, *, issuer: str, keys: tuple[VerificationKey, ...], audiences: tuple[str, ...],
                 lookup: Lookup) -> None:
        self._issuer = issuer
        self._keys = keys
        self._audiences = frozenset(audiences)
        self._lookup = lookup

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        token = credentials.token
        if not token or token.count(".") != 2 or _unverified_issuer(token) != self._issuer:
            return None
        claims = self._verified(token)
        return await self._validate(claims)

    def _verified(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError):
            raise Unauthorized("service account token is malformed") from None
        alg = header.get("alg")
        candidates = [k for k in self._keys if k.algorithm == alg]
        if not candidates:
            raise Unauthorized(f"service account token signed with an unaccepted algorithm {alg!r}")
        for key in candidates:
            try:
                claims: dict[str, Any] = jwt.decode(
                    token, key.key, algorithms=[key.algorithm], leeway=LEEWAY,
                    options={"verify_aud": False, "verify_iss": False, "require": ["exp"]})
            except jwt.InvalidSignatureError:
                continue
            except jwt.ExpiredSignatureError:
                raise Unauthorized("service account token has expired") from None
            except jwt.ImmatureSignatureError:
                raise Unauthorized("service account token is not valid yet") from None
            except (jwt.PyJWTError, ValueError, TypeError) as err:
                raise Unauthorized(f"service account token is invalid: {err}") from None
            return claims
        raise Unauthorized("service account token signature is invalid")

    async def _validate(self, claims: dict[str, Any]) -> UserInfo:
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
        invalid_if_deleted_before = time.time() - LEEWAY
        name, uid = account
        found = await self._lookup("serviceaccounts", namespace, name)
        if found is None:
            raise Unauthorized(f'serviceaccounts "{name}" not found')
        if _deleted_before(found, invalid_if_deleted_before):
            raise Unauthorized(f"service account {namespace}/{name} has been deleted")
        if found.uid != uid:
            raise Unauthorized(f"service account UID ({found.uid}) does not match claim ({uid})")
        secret = _ref(private, "secret")
        if secret is not None:
            await self._check_bound("secrets", namespace, secret, invalid_if_deleted_before)
        extra: tuple[tuple[str, tuple[str, ...]], ...] = ()
        pod = _ref(private, "pod")
        if pod is not None:
            await self._check_bound("pods", namespace, pod, invalid_if_deleted_before)
            extra = ((POD_NAME_KEY, (pod[0],)), (POD_UID_KEY, (pod[1],)))
        return UserInfo(service_account_username(namespace, name), uid, service_account_groups(namespace), extra)

    async def _check_bound(self, resource: str, namespace: str, ref: tuple[str, str], deleted_before: float) -> None:
        found = await self._lookup(resource, namespace, ref[0])
        if found is None or _deleted_before(found, deleted_before):
            raise Unauthorized("service account token has been invalidated")
        if found.uid != ref[1]:
            raise Unauthorized(f"{resource[:-1]} UID ({found.uid}) does not match service account {resource[:-1]} "
                               f"ref claim ({ref[1]})")
