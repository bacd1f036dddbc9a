"""What identities from outside cost a request, in-process: an OIDC ID token (verified, and found in the union's
10 s cache), a token webhook and an authorization webhook (a TokenReview / SubjectAccessReview round trip over
mutual TLS to a local aiohttp webhook, and the cached answer), and the Node authorizer's decisions over a real
core whose node runs PODS Pods.

    python -m bench.identities [--quick]

Each figure is the median over ROUNDS rounds of the µs a call takes, calls back to back on one event loop (the
webhooks and the issuer serve from a thread of this process: a round trip includes their CPU, as it includes the
other side's on one machine). Stdout is one JSON line per figure (bench/_util.py); nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from bench._util import context, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.testing.identities import Authority, SigningKey, start_issuer, start_review_webhook
from server.auth.attributes import Attributes
from server.auth.authn.oidc import OidcAuthenticator, OidcConfig
from server.auth.authn.union import UnionAuthenticator
from server.auth.node import start_node_authorizer
from server.auth.webhook import WebhookAuthorizer, WebhookTokenAuthenticator, load_kubeconfig
from server.callouts.client import Callouts
from server.kinds import BUILTIN
from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo
from server.objects.core import Core
from server.registry.resources import Registry
from server.startup import bootstrap
from storage import StoreOptions
from storage.lmdb import LmdbStore

PODS = 110  # kubelet's default --max-pods
NODE = UserInfo("system:node:node-0", groups=("system:nodes", "system:authenticated"))


async def timed(call: Callable[[int], Awaitable[Any]], calls: int, rounds: int) -> tuple[float, list[float]]:
    """Median µs a call over rounds, and each round's figure; call(i) makes the i-th call of a round."""
    figures = []
    for _ in range(rounds):
        started = time.perf_counter()
        for i in range(calls):
            await call(i)
        figures.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(figures), figures


def report(op: str, impl: str, result: tuple[float, list[float]]) -> None:
    emit(op, impl, "us_per_call", result[0], context("in-process"), rounds=[round(f, 2) for f in result[1]])


async def oidc(directory: Path, ca: Authority, calls: int, rounds: int) -> None:
    issuer = start_issuer(ca, directory)
    key = SigningKey.make("bench", "RS256")
    issuer.published.append(key)
    (directory / "ca.crt").write_bytes(ca.pem)
    authenticator = OidcAuthenticator(OidcConfig(issuer.url, "capstan", ca_file=directory / "ca.crt"))
    authenticator.start()
    await asyncio.wait_for(authenticator.initialized.wait(), 10)
    union = UnionAuthenticator(connection=(), tokens=(authenticator,), anonymous=False,
                               cacheable_tokens=(authenticator,))
    try:
        tokens = [issuer.token(key, {"sub": f"user-{i}"}) for i in range(calls)]

        async def verify(i: int) -> None:
            await authenticator.authenticate(Credentials(token=tokens[i]))

        async def cached(i: int) -> None:
            await union.authenticate(Credentials(token=tokens[0]))

        report("oidc", "verify", await timed(verify, calls, rounds))
        report("oidc", "union-cached", await timed(cached, calls, rounds))
    finally:
        await authenticator.stop()
        issuer.server.stop()


async def webhooks(directory: Path, ca: Authority, calls: int, rounds: int) -> None:
    tokens = start_review_webhook(ca, directory / "tokens", lambda spec: {
        "authenticated": True, "user": {"username": spec["token"]}})
    sars = start_review_webhook(ca, directory / "sars", lambda spec: {"allowed": True})
    client = ca.issue("kube-apiserver", server=False)
    callouts = Callouts()
    try:
        authn = WebhookTokenAuthenticator(callouts, load_kubeconfig(tokens.kubeconfig(directory / "t.kc", ca, client)))
        authz = WebhookAuthorizer(callouts, load_kubeconfig(sars.kubeconfig(directory / "s.kc", ca, client)))
        counter = iter(range(10**9))

        async def token_round_trip(i: int) -> None:
            await authn.authenticate(Credentials(token=f"t-{next(counter)}"))

        async def token_cached(i: int) -> None:
            await authn.authenticate(Credentials(token="t-cached"))

        async def sar_round_trip(i: int) -> None:
            await authz.decide(Attributes(NODE, "get", resource="configmaps", name=f"c-{next(counter)}"))

        async def sar_cached(i: int) -> None:
            await authz.decide(Attributes(NODE, "get", resource="configmaps", name="cached"))

        trips = max(calls // 10, 20)
        report("token-webhook", "round-trip", await timed(token_round_trip, trips, rounds))
        report("token-webhook", "cached", await timed(token_cached, calls, rounds))
        report("authorization-webhook", "round-trip", await timed(sar_round_trip, trips, rounds))
        report("authorization-webhook", "cached", await timed(sar_cached, calls, rounds))
    finally:
        await callouts.close()
        tokens.server.stop()
        sars.server.stop()


async def node_authorizer(directory: Path, pods: int, calls: int, rounds: int) -> None:
    store = await LmdbStore.open(directory / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = Core(store, Registry(BUILTIN))
    try:
        await bootstrap.ensure_default_namespaces(core)
        for i in range(pods):
            pod = {"metadata": {"name": f"p-{i}", "namespace": "default"}, "spec": {
                "nodeName": "node-0", "containers": [{"name": "c", "image": "nginx", "envFrom": [
                    {"configMapRef": {"name": f"config-{i}"}}]}],
                "volumes": [{"name": "s", "secret": {"secretName": f"secret-{i}"}}]}}
            await core.create(core_pb2.CreateRequest(
                path=core_pb2.ResourcePath(version="v1", resource="pods", namespace="default"),
                object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(pod))))
        authorizer = await start_node_authorizer(core)
        try:
            last = Attributes(NODE, "get", resource="secrets", namespace="default", name=f"secret-{pods - 1}")
            unrelated = Attributes(NODE, "get", resource="secrets", namespace="default", name="nobody")
            rule = Attributes(NODE, "create", resource="events", namespace="default")

            def sync(attributes: Attributes) -> Callable[[int], Awaitable[None]]:
                async def call(i: int) -> None:
                    authorizer.authorize(attributes)
                return call

            report("node-authorizer", f"secret-allowed-{pods}-pods", await timed(sync(last), calls, rounds))
            report("node-authorizer", f"secret-refused-{pods}-pods", await timed(sync(unrelated), calls, rounds))
            report("node-authorizer", "system-node-rule", await timed(sync(rule), calls, rounds))
        finally:
            await authorizer.stop()
    finally:
        await store.close()


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench.identities")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    calls, rounds = (200, 3) if args.quick else (2000, 7)
    ca = Authority.make()
    with tempfile.TemporaryDirectory(prefix="bench-identities-") as temp:
        directory = Path(temp)
        (directory / "issuer").mkdir()
        note("OIDC")
        await oidc(directory / "issuer", ca, calls, rounds)
        note("webhooks")
        await webhooks(directory, ca, calls, rounds)
        note("node authorizer")
        await node_authorizer(directory, PODS, calls, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
