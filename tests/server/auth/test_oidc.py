"""The OIDC authenticator against a real issuer over HTTPS (discovery and JWKS served by aiohttp, ID tokens
signed with RS256 and ES256 keys made here): kube's claim rules, its refusals, and keys fetched again when a
token names one the authenticator has not seen."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from capstan.testing.identities import Authority, Issuer, SigningKey, start_issuer
from server.auth.authn import oidc
from server.auth.authn.oidc import OidcAuthenticator, OidcConfig, OidcConfigError
from server.auth.errors import Unauthorized
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo

RSA = SigningKey.make("rsa-1", "RS256")
EC = SigningKey.make("ec-1", "ES256")
UNPUBLISHED = SigningKey.make("rsa-2", "RS256")


@pytest.fixture(scope="module")
def ca() -> Authority:
    return Authority.make()


@pytest.fixture(scope="module")
def issuer(ca: Authority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Issuer]:
    started = start_issuer(ca, tmp_path_factory.mktemp("issuer"))
    started.published[:] = [RSA, EC]
    try:
        yield started
    finally:
        started.server.stop()


@pytest.fixture(scope="module")
def ca_file(ca: Authority, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ca") / "ca.crt"
    path.write_bytes(ca.pem)
    return path


async def started(config: OidcConfig) -> OidcAuthenticator:
    authenticator = OidcAuthenticator(config)
    authenticator.start()
    await asyncio.wait_for(authenticator.initialized.wait(), 10)
    return authenticator


@pytest.fixture
async def base(issuer: Issuer, ca_file: Path) -> AsyncIterator[OidcConfig]:
    yield OidcConfig(issuer.url, "capstan", ca_file=ca_file, signing_algs=("RS256", "ES256"))


def _user(name: str, *groups: str) -> UserInfo:
    return UserInfo(name, groups=groups)


# (config changes, claims, key, the user or the refusal's words)
@dataclass(frozen=True)
class FromNow:
    """A time claim this many seconds from when the token is made: the suite may run a case minutes after it
    collected the table."""

    seconds: int


CASES: list[tuple[str, dict[str, Any], dict[str, Any], SigningKey, UserInfo | str]] = [
    ("sub with the issuer prefix", {}, {}, RSA, _user("{issuer}#alice")),
    ("ES256", {}, {}, EC, _user("{issuer}#alice")),
    ("a prefix given", {"username_prefix": "oidc:"}, {}, RSA, _user("oidc:alice")),
    ("prefix - is none", {"username_prefix": "-"}, {}, RSA, _user("alice")),
    ("email has no default prefix", {"username_claim": "email"},
     {"email": "a@example.com", "email_verified": True}, RSA, _user("a@example.com")),
    ("email without email_verified", {"username_claim": "email"}, {"email": "a@example.com"}, RSA,
     _user("a@example.com")),
    ("email not verified", {"username_claim": "email"}, {"email": "a@example.com", "email_verified": False},
     RSA, "oidc: email not verified"),
    ("groups, prefixed", {"groups_claim": "groups", "groups_prefix": "oidc:"}, {"groups": ["dev", "ops"]}, RSA,
     _user("{issuer}#alice", "oidc:dev", "oidc:ops")),
    ("a group as a string", {"groups_claim": "groups"}, {"groups": "dev"}, RSA, _user("{issuer}#alice", "dev")),
    ("groups not strings", {"groups_claim": "groups"}, {"groups": [1]}, RSA, "parse groups claim"),
    ("required claim present", {"required_claims": (("hd", "example.com"),)}, {"hd": "example.com"}, RSA,
     _user("{issuer}#alice")),
    ("required claim absent", {"required_claims": (("hd", "example.com"),)}, {}, RSA,
     "oidc: required claim hd not present in ID token"),
    ("required claim differs", {"required_claims": (("hd", "example.com"),)}, {"hd": "evil.com"}, RSA,
     "oidc: required claim hd value does not match. Got = evil.com, want = example.com"),
    ("another audience", {}, {"aud": "someone-else"}, RSA, "expected audience 'capstan'"),
    ("expired", {}, {"exp": FromNow(-10)}, RSA, "token is expired"),
    ("not yet valid", {}, {"nbf": FromNow(600)}, RSA, "before the nbf"),
    ("no username claim", {"username_claim": "preferred_username"}, {}, RSA,
     "oidc: parse username claims 'preferred_username': claim not present"),
    ("an algorithm not accepted", {"signing_algs": ("RS256",)}, {}, EC, "unsupported algorithm"),
    ("a key the issuer never published", {}, {}, UNPUBLISHED, "failed to verify signature"),
]


@pytest.mark.parametrize(("changes", "claims", "key", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_id_tokens_as_kube_judges_them(issuer: Issuer, base: OidcConfig, changes: dict[str, Any],
                                             claims: dict[str, Any], key: SigningKey,
                                             expected: UserInfo | str) -> None:
    authenticator = await started(replace(base, **changes))
    try:
        token = issuer.token(key, {name: int(time.time()) + value.seconds if isinstance(value, FromNow) else value
                                   for name, value in claims.items()})
        if isinstance(expected, str):
            with pytest.raises(Unauthorized, match=expected.replace("(", r"\(").replace(".", r"\.")):
                await authenticator.authenticate(Credentials(token=token))
        else:
            user = await authenticator.authenticate(Credentials(token=token))
            assert user == UserInfo(expected.name.format(issuer=issuer.url), groups=expected.groups)
    finally:
        await authenticator.stop()


async def test_other_issuers_and_non_jwts_are_not_its_own(issuer: Issuer, base: OidcConfig) -> None:
    authenticator = await started(base)
    try:
        assert await authenticator.authenticate(Credentials(token="static-token")) is None
        other = issuer.token(RSA, {"iss": "https://elsewhere.example"})
        assert await authenticator.authenticate(Credentials(token=other)) is None
    finally:
        await authenticator.stop()


async def test_a_new_key_is_fetched_once_and_then_rate_limited(issuer: Issuer, base: OidcConfig,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    authenticator = await started(base)
    rotated = SigningKey.make("rsa-rotated", "RS256")
    try:
        before = issuer.fetches["jwks"]
        token = issuer.token(rotated, {})
        with pytest.raises(Unauthorized):  # not published yet: one fetch, still unknown
            await authenticator.authenticate(Credentials(token=token))
        issuer.published.append(rotated)
        with pytest.raises(Unauthorized):  # within REFRESH_INTERVAL: no second fetch
            await authenticator.authenticate(Credentials(token=token))
        assert issuer.fetches["jwks"] == before
        monkeypatch.setattr(oidc, "REFRESH_INTERVAL", 0.0)
        results = await asyncio.gather(*(authenticator.authenticate(Credentials(token=token)) for _ in range(5)))
        assert {u.name for u in results if u is not None} == {f"{issuer.url}#alice"}
        assert issuer.fetches["jwks"] == before + 1  # concurrent requests share one fetch
    finally:
        issuer.published.remove(rotated)
        await authenticator.stop()


async def test_tokens_wait_for_discovery_and_a_wrong_issuer_never_initializes(
        issuer: Issuer, base: OidcConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oidc, "RETRY", 0.05)
    issuer.issuer_override = "https://impostor.example"
    authenticator = OidcAuthenticator(base)
    authenticator.start()
    try:
        token = issuer.token(RSA, {})
        with pytest.raises(Unauthorized, match="authenticator not initialized"):
            await authenticator.authenticate(Credentials(token=token))
        issuer.issuer_override = ""  # the provider is fixed: the next attempt initializes
        await asyncio.wait_for(authenticator.initialized.wait(), 5)
        assert await authenticator.authenticate(Credentials(token=token)) is not None
    finally:
        issuer.issuer_override = ""
        await authenticator.stop()


@pytest.mark.parametrize(("changes", "words"), [
    ({"issuer_url": "http://127.0.0.1"}, "'https' required"),
    ({"client_id": ""}, "oidc-client-id is required"),
    ({"signing_algs": ("HS256",)}, "unsupported signing alg: HS256"),
])
def test_flags_kube_refuses(base: OidcConfig, changes: dict[str, Any], words: str) -> None:
    with pytest.raises(OidcConfigError, match=words):
        OidcAuthenticator(replace(base, **changes))
