"""Identities from outside, end to end: one `capstan serve` over HTTPS with an OIDC issuer, a token webhook
and an authorization webhook the test runs (aiohttp over TLS from a test CA), `--authorization-mode
Node,RBAC,Webhook` and NodeRestriction; users log in with ID tokens and webhook tokens, the webhook decides what
RBAC does not, and node identities do what a kubelet does and are refused what kube refuses, the simulated
kubelets of `capstan nodes` among them."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from capstan.testing.identities import (
    Authority,
    Issuer,
    ReviewWebhook,
    SigningKey,
    start_issuer,
    start_review_webhook,
)
from capstan.testing.server import LocalServer, start

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
Obj = dict[str, Any]
KEY = SigningKey.make("rsa-1", "RS256")


def token_answer(spec: Obj) -> Obj:
    if spec["token"] == "carol-token":
        return {"authenticated": True, "user": {"username": "carol", "groups": ["remote-team"]}}
    return {"authenticated": False}


def sar_answer(spec: Obj) -> Obj:
    attributes = spec.get("resourceAttributes") or {}
    if spec["user"] != "carol":
        return {"allowed": False}
    if attributes.get("resource") == "configmaps":
        return {"allowed": True}
    if attributes.get("resource") == "secrets":
        return {"allowed": False, "denied": True, "reason": "carol never reads secrets"}
    return {"allowed": False}


@dataclass
class Cluster:
    server: LocalServer
    issuer: Issuer
    tokens: ReviewWebhook
    sars: ReviewWebhook

    def kubectl(self, *args: str, stdin: str | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["kubectl", "--kubeconfig", str(self.server.kubeconfig), *args], input=stdin,
                              capture_output=True, text=True, timeout=30, check=False)
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    def as_node(self, node: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.kubectl("--as", f"system:node:{node}", "--as-group", "system:nodes", *args, stdin=stdin,
                            ok=False)

    def request(self, method: str, path: str, token: str, body: Obj | None = None) -> tuple[int, Obj]:
        context = ssl.create_default_context(cafile=str(self.server.data_dir / "pki" / "ca.crt"))
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def whoami(self, token: str) -> tuple[int, Obj]:
        code, body = self.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token,
                                  {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        return code, body["status"]["userInfo"] if code == 201 else body


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("identities")
    ca = Authority.make()
    (directory / "ca.crt").write_bytes(ca.pem)
    (directory / "issuer").mkdir()
    issuer = start_issuer(ca, directory / "issuer")
    issuer.published[:] = [KEY]
    tokens = start_review_webhook(ca, directory / "tokens", token_answer)
    sars = start_review_webhook(ca, directory / "sars", sar_answer)
    client = ca.issue("kube-apiserver", server=False)
    server = None
    try:
        server = start(directory / "data", extra=(
            "--oidc-issuer-url", issuer.url, "--oidc-client-id", "capstan", "--oidc-ca-file", str(directory / "ca.crt"),
            "--oidc-username-prefix", "oidc:", "--oidc-groups-claim", "groups", "--oidc-groups-prefix", "oidc:",
            "--oidc-required-claim", "tenant=blue",
            "--authentication-token-webhook-config-file", str(tokens.kubeconfig(directory / "tokens.kc", ca, client)),
            "--authentication-token-webhook-version", "v1",
            "--authorization-mode", "Node,RBAC,Webhook",
            "--authorization-webhook-config-file", str(sars.kubeconfig(directory / "sars.kc", ca, client)),
            "--authorization-webhook-version", "v1",
            "--enable-admission-plugins", "NodeRestriction"))
        yield Cluster(server, issuer, tokens, sars)
    finally:
        if server is not None:
            server.stop()
        for hook in (issuer.server, tokens.server, sars.server):
            hook.stop()


def until(fetch: Callable[[], Any], check: Callable[[Any], bool], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = fetch()
        if check(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"last seen: {got}")
        time.sleep(0.2)


OIDC_CASES = [
    ({"groups": ["dev"], "tenant": "blue"}, 201, {"username": "oidc:alice", "groups": ["oidc:dev",
                                                                                       "system:authenticated"]}),
    ({"groups": ["dev"]}, 401, None),  # the required claim is missing
    ({"tenant": "blue", "aud": "another-client"}, 401, None),
]


@pytest.mark.parametrize(("claims", "code", "user"), OIDC_CASES, ids=["logged-in", "no-tenant", "wrong-audience"])
def test_id_tokens_log_users_in(cluster: Cluster, claims: Obj, code: int, user: Obj | None) -> None:
    token = cluster.issuer.token(KEY, claims)
    _, got = until(lambda: cluster.whoami(token), lambda answer: answer[0] == code)  # discovery is async
    if user is not None:
        assert got == user
    else:
        assert got["reason"] == "Unauthorized"


def test_the_token_webhook_and_the_authorization_webhook(cluster: Cluster) -> None:
    assert cluster.whoami("carol-token") == (201, {"username": "carol",
                                                   "groups": ["remote-team", "system:authenticated"]})
    assert cluster.whoami("nobody-token")[0] == 401
    # RBAC grants carol nothing: the webhook allows configmaps, denies secrets, and has no opinion on pods
    assert cluster.request("GET", "/api/v1/namespaces/default/configmaps", "carol-token")[0] == 200
    code, status = cluster.request("GET", "/api/v1/namespaces/default/secrets", "carol-token")
    assert code == 403 and status["message"].endswith(": carol never reads secrets")
    assert cluster.request("GET", "/api/v1/namespaces/default/pods", "carol-token")[0] == 403
    reviews = [r["spec"] for r in cluster.sars.seen if r["spec"]["user"] == "carol"]
    assert {"namespace": "default", "verb": "list", "version": "v1", "resource": "secrets"} in \
        [r.get("resourceAttributes") for r in reviews]


MIRROR = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeName: {node}
  containers: [{{name: app, image: nginx}}]
"""
MOUNTING = """apiVersion: v1
kind: Pod
metadata: {name: mounting, namespace: default}
spec:
  nodeName: remote-0
  containers: [{name: app, image: nginx}]
  volumes: [{name: s, secret: {secretName: mounted}}]
"""


def test_node_identities_do_what_kubelets_do_and_nothing_more(cluster: Cluster, tmp_path: Path) -> None:
    log_path = tmp_path / "nodes.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "capstan", "nodes", "--kubeconfig",
                                    str(cluster.server.kubeconfig), "--count", "2", "--node-name-prefix", "remote-"],
                                   stdout=log, stderr=log)
        try:
            def ready() -> list[str]:
                nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
                return sorted(n["metadata"]["name"] for n in nodes if any(
                    c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or []))

            assert until(ready, lambda names: names == ["remote-0", "remote-1"])
            cluster.kubectl("create", "secret", "generic", "mounted", "--from-literal=a=b")
            cluster.kubectl("create", "secret", "generic", "unrelated", "--from-literal=a=b")
            cluster.kubectl("apply", "-f", "-", stdin=MOUNTING)
            until(lambda: cluster.kubectl("get", "pod", "mounting", "-o", "jsonpath={.status.phase}").stdout,
                  lambda phase: phase == "Running")
            refusals = [
                (("get", "secret", "mounted"), ""),
                (("get", "secret", "unrelated"),
                 "no relationship found between node 'remote-0' and this object"),
                (("get", "node", "remote-1"), ""),
                (("label", "node", "remote-0", "team=blue"), ""),
                (("label", "node", "remote-0", "node-role.kubernetes.io/control-plane="),
                 "is not allowed to modify labels: node-role.kubernetes.io/control-plane"),
                (("label", "node", "remote-1", "team=blue"),
                 'node "remote-0" is not allowed to modify node "remote-1"'),
                (("taint", "node", "remote-0", "a=b:NoSchedule"), 'node "remote-0" is not allowed to modify taints'),
                (("delete", "namespace", "default", "--wait=false"), 'cannot delete resource "namespaces"'),
                (("get", "lease", "remote-1", "-n", "kube-node-lease"),
                 "can only access node lease with the same name as the requesting node"),
            ]
            for args, refusal in refusals:
                done = cluster.as_node("remote-0", *args)
                if refusal:
                    assert done.returncode != 0 and refusal in done.stderr, (args, done.stderr)
                else:
                    assert done.returncode == 0, (args, done.stderr)
            created = cluster.as_node("remote-0", "create", "--validate=false", "-f", "-",
                                      stdin=MIRROR.format(name="plain", node="remote-0"))
            assert 'pod does not have "kubernetes.io/config.mirror" annotation, node "remote-0" can only create ' \
                   "mirror pods" in created.stderr
            deleted = cluster.as_node("remote-1", "delete", "pod", "mounting", "--wait=false")
            assert 'node "remote-1" can only delete pods with spec.nodeName set to itself' in deleted.stderr
            cluster.kubectl("delete", "pod", "mounting", "--wait=true", "--timeout=20s")
        finally:
            process.terminate()
            process.wait(10)
    assert "writing as system:node:<name>" in log_path.read_text()
