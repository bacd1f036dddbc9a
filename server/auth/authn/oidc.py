"""OpenID Connect ID tokens (kube-apiserver 1.28's --oidc-* flags): users of an identity provider log in with
the ID token it issued, verified against the provider's published keys.

Contract, as kube's plugin/pkg/authenticator/token/oidc with go-oidc v2:
- The issuer URL must be https. Its discovery document (`<issuer>/.well-known/openid-configuration`) is
  fetched in the background when the authenticator starts, and again every RETRY seconds until it answers;
  its `issuer` must be the configured URL exactly. Until then every token whose `iss` is ours is refused
  ("authenticator not initialized"); nothing waits on the network in the request path but a key fetch.
- Keys come from the document's `jwks_uri`. A token whose `kid` no known key has (or that no known key
  verifies) makes the keys be fetched again, at most once per REFRESH_INTERVAL seconds, concurrent requests
  sharing one fetch; between fetches such a token is refused.
- A token is this authenticator's when it is a JWT whose `iss` is the issuer URL; any other token is None
  (the union asks the next authenticator). Ours, checked in go-oidc's order, each failure Unauthorized: the
  algorithm is one of --oidc-signing-algs (default RS256), the signature, `aud` contains --oidc-client-id,
  `exp` has not passed, `nbf` with one minute's leeway.
- The username is the --oidc-username-claim (default `sub`), prefixed with --oidc-username-prefix; with no
  prefix given, claims other than `email` are prefixed with `<issuer>#`, and "-" means no prefix. With the
  `email` claim, an `email_verified` claim that is present must be true. Groups are the --oidc-groups-claim
  (a string or a list of strings), each prefixed with --oidc-groups-prefix. Every --oidc-required-claim must
  be present with exactly its value.

The union caches a success 10 s by the token (kube's token cache), so a token is verified once in that time.
Fetches use the --oidc-ca-file CA, or the system roots, and run on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from jwt.algorithms import Algorithm, get_default_algorithms

from server.auth.errors import Unauthorized
from server.auth.serviceaccounts import jws
from server.machinery.credentials import Credentials
from server.machinery.tlsroots import as_go_pool
from server.machinery.user import UserInfo
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

SUPPORTED_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512")
RETRY = 10.0  # seconds between discovery attempts until one succeeds (kube's 10 s poll)
REFRESH_INTERVAL = 10.0  # seconds at least between two key fetches caused by unknown keys
FETCH_TIMEOUT = 30.0
NBF_LEEWAY = 60.0  # go-oidc's leeway on nbf
_ALGORITHMS: dict[str, Algorithm] = {name: alg for name, alg in get_default_algorithms().items()
                                     if name in SUPPORTED_ALGORITHMS}


class OidcConfigError(ValueError):
    """The flags cannot start (an http issuer, an unknown algorithm, an unreadable CA): the command exits."""


@dataclass(frozen=True, slots=True)
class OidcConfig:
    issuer_url: str
    client_id: str
    username_claim: str = "sub"
    username_prefix: str = ""  # "" picks kube's default, "-" is none
    groups_claim: str = ""
    groups_prefix: str = ""
    required_claims: tuple[tuple[str, str], ...] = ()
    ca_file: Path | None = None
    signing_algs: tuple[str, ...] = ("RS256",)

    def effective_username_prefix(self) -> str:
        """kube-apiserver's rule: "-" disables the prefix; none given means `<issuer>#` unless the claim is email."""
        if self.username_prefix == "-":
            return ""
        if self.username_prefix:
            return self.username_prefix
        return "" if self.username_claim == "email" else self.issuer_url + "#"

    def check(self) -> None:
        if not self.issuer_url.startswith("https://"):
            raise OidcConfigError(f"'oidc-issuer-url' ({self.issuer_url!r}) has invalid scheme ('https' required)")
        if not self.client_id:
            raise OidcConfigError("oidc-client-id is required with oidc-issuer-url")
        for alg in self.signing_algs:
            if alg not in SUPPORTED_ALGORITHMS:
                raise OidcConfigError(f"oidc: unsupported signing alg: {alg}")


def _tls(ca_file: Path | None) -> ssl.SSLContext:
    try:
        return as_go_pool(ssl.create_default_context(cafile=str(ca_file) if ca_file else None))
    except (OSError, ssl.SSLError) as err:
        raise OidcConfigError(f"failed to read the oidc-ca-file {ca_file}: {err}") from None


@dataclass(slots=True)
class _Keys:
    by_kid: dict[str, list[Any]] = field(default_factory=dict)  # kid ("" when the JWK has none) -> keys
    fetched_at: float = float("-inf")  # monotonic


class OidcAuthenticator:
    def __init__(self, config: OidcConfig) -> None:
        config.check()
        self._config = config
        self._prefix = config.effective_username_prefix()
        self._tls = _tls(config.ca_file)
        self._session: aiohttp.ClientSession | None = None
        self._jwks_uri = ""
        self._keys = _Keys()
        self._refreshing: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None
        self.initialized = asyncio.Event()

    def start(self) -> None:
        """Discovery in the background, retried until it answers."""
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._tls),
                                              timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT))
        self._starting = asyncio.get_running_loop().create_task(self._discover())

    async def stop(self) -> None:
        await cancel_all((self._starting, self._refreshing))
        if self._session is not None:
            await self._session.close()

    async def _get(self, url: str) -> Any:
        assert self._session is not None
        async with self._session.get(url, headers={"Accept": "application/json"}) as resp:
            body = await resp.read()
            if resp.status != 200:
                raise ValueError(f"{resp.status} {resp.reason}: {body[:200]!r}")
            return orjson.loads(body)

    async def _discover(self) -> None:
        url = self._config.issuer_url.rstrip("/") + "/.well-known/openid-configuration"
        while True:
            try:
                document = await self._get(url)
                if not isinstance(document, dict):
                    raise ValueError("the discovery document is not a JSON object")
                if document.get("issuer") != self._config.issuer_url:
                    raise ValueError(f"oidc: issuer did not match the issuer returned by provider, expected "
                                     f"{self._config.issuer_url!r} got {document.get('issuer')!r}")
                jwks_uri = document.get("jwks_uri")
                if not isinstance(jwks_uri, str) or not jwks_uri:
                    raise ValueError("the discovery document has no jwks_uri")
                self._jwks_uri = jwks_uri
                await self._fetch_keys()
                self.initialized.set()
                return
            except (aiohttp.ClientError, OSError, ValueError, TimeoutError) as err:
                log.warning("oidc authenticator: initializing plugin: %s", err)
            await asyncio.sleep(RETRY)

    async def _fetch_keys(self) -> None:
        self._keys.fetched_at = time.monotonic()
        document = await self._get(self._jwks_uri)
        keys: dict[str, list[Any]] = {}
        for raw in (document.get("keys") if isinstance(document, dict) else None) or []:
            if not isinstance(raw, dict) or raw.get("use", "sig") != "sig":
                continue
            alg_name = raw.get("alg")
            try:
                kty = raw.get("kty")
                family = "RS256" if kty == "RSA" else "ES256" if kty == "EC" else ""
                if not family:
                    continue
                key = _ALGORITHMS[family].from_jwk(raw)
            except (ValueError, KeyError, TypeError) as err:
                log.warning("oidc authenticator: skipping a key of %s: %s", self._jwks_uri, err)
                continue
            keys.setdefault(str(raw.get("kid") or ""), []).append((key, kty, alg_name))
        self._keys = _Keys(keys, self._keys.fetched_at)

    async def _refresh(self) -> bool:
        """Fetch the keys again unless they were fetched in the last REFRESH_INTERVAL seconds; whether they were."""
        if self._refreshing is None or self._refreshing.done():
            if time.monotonic() - self._keys.fetched_at < REFRESH_INTERVAL:
                return False
            self._refreshing = asyncio.get_running_loop().create_task(self._fetch_keys())
        try:
            await asyncio.shield(self._refreshing)
        except (aiohttp.ClientError, OSError, ValueError, TimeoutError) as err:
            log.warning("oidc authenticator: fetching keys from %s: %s", self._jwks_uri, err)
            return False
        return True

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        token = credentials.token
        if not token or token.count(".") != 2:
            return None
        parsed = jws.parse(token)
        if parsed is None or parsed.claims.get("iss") != self._config.issuer_url:
            return None
        if not self.initialized.is_set():
            raise Unauthorized("oidc: authenticator not initialized")
        alg = parsed.header.get("alg")
        if alg not in self._config.signing_algs:
            raise Unauthorized(f"oidc: id token signed with unsupported algorithm, expected "
                               f"{list(self._config.signing_algs)} got {alg!r}")
        if not self._verified(parsed, str(alg)) and not (await self._refresh() and self._verified(parsed, str(alg))):
            raise Unauthorized("oidc: verify token: failed to verify signature: failed to verify id token signature")
        return self._user(parsed.claims)

    def _verified(self, token: jws.Token, alg: str) -> bool:
        kid = token.header.get("kid")
        candidates = (self._keys.by_kid.get(str(kid), []) if kid else
                      [k for keys in self._keys.by_kid.values() for k in keys])
        family = "RSA" if alg[0] in "RP" else "EC"
        algorithm = _ALGORITHMS[alg]
        for key, kty, key_alg in candidates:
            if kty != family or (key_alg and key_alg != alg):
                continue
            try:
                if algorithm.verify(token.signing_input, key, token.signature):
                    return True
            except (ValueError, TypeError):
                continue
        return False

    def _user(self, claims: Mapping[str, Any]) -> UserInfo:
        config = self._config
        audiences = claims.get("aud")
        listed = [audiences] if isinstance(audiences, str) else audiences if isinstance(audiences, list) else []
        if config.client_id not in listed:
            raise Unauthorized(f"oidc: verify token: oidc: expected audience {config.client_id!r} got {listed!r}")
        now = time.time()
        expiry = claims.get("exp")
        if not isinstance(expiry, int | float) or isinstance(expiry, bool):
            raise Unauthorized("oidc: verify token: oidc: malformed claim exp")
        if now > expiry:
            raise Unauthorized(f"oidc: verify token: oidc: token is expired (Token Expiry: {expiry})")
        nbf = claims.get("nbf")
        if isinstance(nbf, int | float) and not isinstance(nbf, bool) and now + NBF_LEEWAY < nbf:
            raise Unauthorized(f"oidc: verify token: oidc: current time {now} before the nbf (not before) time: {nbf}")
        claim = config.username_claim
        username = claims.get(claim)
        if not isinstance(username, str):
            raise Unauthorized(f"oidc: parse username claims {claim!r}: "
                               + ("claim not present" if username is None else "not a string"))
        if claim == "email" and "email_verified" in claims:
            verified = claims["email_verified"]
            if not isinstance(verified, bool):
                raise Unauthorized("oidc: parse 'email_verified' claim: not a boolean")
            if not verified:
                raise Unauthorized("oidc: email not verified")
        groups: tuple[str, ...] = ()
        if config.groups_claim and config.groups_claim in claims:
            value = claims[config.groups_claim]
            if isinstance(value, str):
                values = [value]
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                values = value
            else:
                raise Unauthorized(f"oidc: parse groups claim {config.groups_claim!r}: not a string or a list "
                                   "of strings")
            groups = tuple(config.groups_prefix + g for g in values)
        for name, wanted in config.required_claims:
            if name not in claims:
                raise Unauthorized(f"oidc: required claim {name} not present in ID token")
            if claims[name] != wanted:
                raise Unauthorized(f"oidc: required claim {name} value does not match. Got = {claims[name]}, "
                                   f"want = {wanted}")
        return UserInfo(self._prefix + username, groups=groups)
