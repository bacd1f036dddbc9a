"""API aggregation end to end: a real `capstan serve` (and the split form, `capstan core` + `capstan gateway`)
with PKI, an extension API server over HTTPS started here (tests/e2e/extension_apiserver.py) behind a selectorless
Service whose Endpoints point at it, and an APIService handing it group wardle.example.com/v1alpha1.

What is checked: the Available condition through kube's checks, proxying of GET, LIST (kubectl's Table), POST and
WATCH (streamed), the caller's identity as front-proxy headers over the front-proxy client certificate (and never
its own credentials), authorization by Capstan before anything is proxied, kube's 503 text when the backend cannot
be reached, and discovery (legacy, aggregated, kubectl api-resources).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
import yaml

from capstan.cli import pki
from tests.e2e import extension_apiserver as ext
from tests.e2e.conftest import ROOT, START_TIMEOUT, Kubectl, Obj, _Lines, terminate, write_kubeconfig

SERVING = re.compile(r"capstan serving: HTTPS (https://\S+) gRPC (\S+) gRPC-mTLS (\S+)")
APISERVICE = f"{ext.VERSION}.{ext.GROUP}"
SERVER_NAME = "api.wardle.svc"
DAVE_TOKEN, CAROL_TOKEN = "dave-token-0123456789", "carol-token-0123456789"
TOKENS_CSV = f'{DAVE_TOKEN},dave,uid-dave,wardlers\n{CAROL_TOKEN},carol,uid-carol,devs\n'
CONDITION_TIMEOUT = 20.0


def _host_ip() -> str | None:
    """A non-loopback address of this machine: Endpoints may not name a loopback one (kube's validation)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _setup(ip: str, port: int) -> str:
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: wardle}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: team}}
---
apiVersion: v1
kind: Service
metadata: {{name: api, namespace: wardle}}
spec:
  ports: [{{name: https, port: 443, targetPort: {port}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: api, namespace: wardle}}
subsets: [{{addresses: [{{ip: "{ip}"}}], ports: [{{name: https, port: {port}}}]}}]
---
apiVersion: v1
kind: Service
metadata: {{name: noendpoints, namespace: wardle}}
spec:
  ports: [{{name: https, port: 443}}]
---
apiVersion: v1
kind: Service
metadata: {{name: sliced, namespace: wardle}}
spec:
  ports: [{{name: https, port: 443}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: sliced-1, namespace: wardle, labels: {{kubernetes.io/service-name: sliced}}}}
addressType: IPv4
endpoints: [{{addresses: ["{ip}"], conditions: {{ready: true}}}}]
ports: [{{name: https, port: {port}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: flunder-reader, namespace: team}}
rules: [{{apiGroups: [{ext.GROUP}], resources: [flunders], verbs: [get, list, watch]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: wardlers-read, namespace: team}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: flunder-reader}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: wardlers}}]
"""


def api_service(*, service: str = "api", port: int = 443, ca_bundle: bytes = b"", insecure: bool = False,
                group: str = ext.GROUP, version: str = ext.VERSION) -> Obj:
    spec: Obj = {"group": group, "version": version, "groupPriorityMinimum": 2000, "versionPriority": 10,
                 "service": {"namespace": "wardle", "name": service, "port": port}}
    if ca_bundle:
        spec["caBundle"] = base64.b64encode(ca_bundle).decode()
    if insecure:
        spec["insecureSkipTLSVerify"] = True
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"{version}.{group}"},
            "spec": spec}


@dataclass
class Cluster:
    https: str
    data: Path
    admin: Kubectl
    as_token: Callable[[str], Kubectl]
    backend: ext.ExtensionServer
    ip: str

    def apply(self, doc: Obj | str) -> None:
        text = doc if isinstance(doc, str) else json.dumps(doc)
        ran = self.admin("apply", "-f", "-", input=text)
        assert ran.code == 0, ran.err

    def condition(self, name: str = APISERVICE) -> Obj:
        obj = self.admin.json("get", "apiservice", name, "-o", "json")
        return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Available"), {})

    def wait_condition(self, status: str, reason: str, name: str = APISERVICE) -> Obj:
        deadline = time.monotonic() + CONDITION_TIMEOUT
        while True:
            found = self.condition(name)
            if (found.get("status"), found.get("reason")) == (status, reason):
                return found
            if time.monotonic() > deadline:
                pytest.fail(f"APIService {name}: Available never {status}/{reason}; last {found}")
            time.sleep(0.2)

    def tls(self) -> ssl.SSLContext:
        certs = pki.CertDir(self.data / "pki")
        context = ssl.create_default_context(cafile=certs.ca_cert)
        context.load_cert_chain(certs.admin_cert, certs.admin_key)
        return context


def _launch(procs: list[subprocess.Popen[str]], *args: str, pattern: re.Pattern[str]) -> re.Match[str]:
    proc = subprocess.Popen([sys.executable, "-m", "capstan", *args], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    procs.append(proc)
    assert proc.stderr is not None
    match = _Lines(proc.stderr).expect(pattern, START_TIMEOUT)
    if match is None:
        pytest.fail(f"capstan {args[0]} did not start listening within {START_TIMEOUT}s")
    return match


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in reversed(procs):
        terminate(proc)


def _cluster(base: Path, https: str, ip: str) -> Cluster:
    data = base / "data"
    write_kubeconfig(data, base / "admin.kubeconfig")
    if https:
        config = yaml.safe_load((base / "admin.kubeconfig").read_text())
        config["clusters"][0]["cluster"]["server"] = https
        (base / "admin.kubeconfig").write_text(yaml.safe_dump(config))
    admin = Kubectl(base / "admin.kubeconfig", base / "cache-admin")

    def as_token(token: str) -> Kubectl:
        config = yaml.safe_load((base / "admin.kubeconfig").read_text())
        config["users"][0]["user"] = {"token": token}
        path = base / f"{token}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return Kubectl(path, base / f"cache-{token}")

    backend = ext.start(base, data / "pki" / "front-proxy-ca.crt", bind=ip, server_name=SERVER_NAME)
    cluster = Cluster(https or yaml.safe_load((base / "admin.kubeconfig").read_text())["clusters"][0]["cluster"][
        "server"], data, admin, as_token, backend, ip)
    cluster.apply(_setup(ip, backend.port))
    return cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    ip = _host_ip()
    if ip is None:
        pytest.skip("no non-loopback address to put in Endpoints")
    base = tmp_path_factory.mktemp("aggregation")
    (base / "tokens.csv").write_text(TOKENS_CSV)
    procs: list[subprocess.Popen[str]] = []
    backend: ext.ExtensionServer | None = None
    try:
        match = _launch(procs, "serve", "--data-dir", str(base / "data"), "--secure-port", "0", "--grpc-port", "0",
                        "--grpc-mtls-port", "0", "--sync", "false", "--token-auth-file", str(base / "tokens.csv"),
                        pattern=SERVING)
        built = _cluster(base, match[1], ip)
        backend = built.backend
        yield built
    finally:
        if backend is not None:
            backend.stop()
        _stop(procs)


@pytest.fixture
def available(cluster: Cluster) -> Cluster:
    cluster.apply(api_service(ca_bundle=cluster.backend.ca_pem))
    cluster.wait_condition("True", "Passed")
    return cluster


# --- the Available condition --------------------------------------------------------------------------------

def _proxied_get(cluster: Cluster) -> tuple[int, str]:
    """A GET of the aggregated group version's flunders through Capstan (status, body), with the admin's certificate."""
    import urllib.error
    import urllib.request

    url = f"{cluster.https}/apis/{ext.GROUP}/{ext.VERSION}/namespaces/team/flunders"
    try:
        with urllib.request.urlopen(url, context=cluster.tls(), timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_available_condition_follows_kubes_checks(cluster: Cluster) -> None:
    ca = cluster.backend.ca_pem
    url = f"https://{cluster.ip}:{cluster.backend.port}/apis/{ext.GROUP}/{ext.VERSION}"
    other_ca = ext.make_ca("someone-else")[0]
    rows: list[tuple[Obj, str, str, str]] = [
        (api_service(service="absent", ca_bundle=ca), "False", "ServiceNotFound",
         'service/absent in "wardle" is not present'),
        (api_service(port=8443, ca_bundle=ca), "False", "ServicePortError",
         'service/api in "wardle" is not listening on port 8443'),
        (api_service(service="noendpoints", ca_bundle=ca), "False", "EndpointsNotFound",
         'cannot find endpoints for service/noendpoints in "wardle"'),
        (api_service(ca_bundle=other_ca), "False", "FailedDiscoveryCheck",
         f"failing or missing response from {url}: "),
        # insecureSkipTLSVerify, and a Service with EndpointSlices and no Endpoints (the backend's certificate
        # names another Service, so only an unverified connection reaches it)
        (api_service(service="sliced", insecure=True), "True", "Passed", "all checks passed"),
        (api_service(service="sliced", ca_bundle=ca), "False", "FailedDiscoveryCheck",
         f"failing or missing response from {url}: "),
        (api_service(ca_bundle=ca), "True", "Passed", "all checks passed"),
        (api_service(ca_bundle=b"no certificate in here"), "False", "FailedDiscoveryCheck",
         f"failing or missing response from {url}: "),
        (api_service(ca_bundle=ca), "True", "Passed", "all checks passed"),
    ]
    for obj, status, reason, message in rows:
        cluster.apply(obj)
        found = cluster.wait_condition(status, reason)
        assert found["message"].startswith(message), found
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", found["lastTransitionTime"])
        # what the proxy answers meanwhile: kube's text while unavailable (a caBundle that does not verify the
        # backend included), the backend's list once available
        code, body = _proxied_get(cluster)
        if status == "False":
            assert (code, body) == (503, "service unavailable\n"), reason
        else:
            assert code == 200 and json.loads(body)["kind"] == "FlunderList", body


async def test_proxy_answers_kubes_503_while_the_backend_is_unavailable(cluster: Cluster) -> None:
    name = "v1.unreachable.example.com"
    cluster.apply(api_service(service="absent", group="unreachable.example.com", version="v1"))
    cluster.wait_condition("False", "ServiceNotFound", name=name)
    async with aiohttp.ClientSession() as http, http.get(
            cluster.https + "/apis/unreachable.example.com/v1/namespaces/team/things", ssl=cluster.tls()) as resp:
        assert (resp.status, resp.headers["Content-Type"], await resp.text()) == (
            503, "text/plain; charset=utf-8", "service unavailable\n")
    assert cluster.admin("delete", "apiservice", name).code == 0
    deadline = time.monotonic() + CONDITION_TIMEOUT
    while True:  # the group version is gone with its APIService: nobody serves the group, Go's text 404
        async with aiohttp.ClientSession() as http, http.get(
                cluster.https + "/apis/unreachable.example.com/v1/namespaces/team/things", ssl=cluster.tls()) as resp:
            body = await resp.text()
            if resp.status == 404 and body == "404 page not found\n":
                break
            if resp.status == 404:  # the proxy's own 404 while the gateway still knew the group version
                assert orjson.loads(body)["reason"] == "NotFound", body
        assert time.monotonic() < deadline, resp.status
        await asyncio.sleep(0.2)


# --- proxying, identity and authorization -------------------------------------------------------------------

def test_kubectl_creates_and_gets_through_the_backend(available: Cluster) -> None:
    flunder = {"apiVersion": ext.GV, "kind": "Flunder", "metadata": {"name": "first", "namespace": "team"}}
    ran = available.admin("create", "-f", "-", input=json.dumps(flunder))
    assert (ran.code, ran.out) == (0, f"flunder.{ext.GROUP}/first created\n"), ran.err
    ran = available.admin("get", "flunders", "-n", "team")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    assert ran.out.splitlines()[1].split()[0] == "first"
    got = available.admin.json("get", "flunder", "first", "-n", "team", "-o", "json")
    assert got["metadata"]["name"] == "first" and got["kind"] == "Flunder"


# (who, kubectl arguments, the user and groups the backend saw; None: refused by Capstan, nothing proxied)
IDENTITY_ROWS: list[tuple[str, list[str], tuple[str, list[str], list[str]] | str]] = [
    ("admin", [], ("kubernetes-admin", ["system:masters", "system:authenticated"], [])),
    ("admin", ["--as=alice", "--as-group=wardlers"], ("alice", ["wardlers", "system:authenticated"], [])),
    ("dave", [], ("dave", ["wardlers", "system:authenticated"], [])),
    ("carol", [], f'flunders.{ext.GROUP} is forbidden: User "carol" cannot list resource "flunders" in API group '
                  f'"{ext.GROUP}" in the namespace "team"'),
]


@pytest.mark.parametrize(("who", "args", "expected"), IDENTITY_ROWS, ids=[r[0] + str(len(r[1])) for r in IDENTITY_ROWS])
def test_the_callers_identity_goes_as_front_proxy_headers(available: Cluster, who: str, args: list[str],
                                                         expected: tuple[str, list[str], list[str]] | str) -> None:
    kubectl = {"admin": available.admin, "dave": available.as_token(DAVE_TOKEN),
               "carol": available.as_token(CAROL_TOKEN)}[who]
    before = len(available.backend.seen)
    ran = kubectl("get", "flunders", "-n", "team", "-o", "name", *args)
    if isinstance(expected, str):
        assert ran.code == 1 and expected in ran.err, ran.err
        assert not [s for s in available.backend.seen[before:] if "/flunders" in str(s)]
        return
    assert ran.code == 0, ran.err
    seen = available.backend.seen[-1]
    user, groups, scopes = expected
    assert (seen["X-Remote-User"], seen["X-Remote-Group"], seen.get("X-Remote-Extra-Scopes", [])) == (
        [user], groups, scopes)
    assert not [h for h in seen if h.lower() == "authorization" or h.lower().startswith("impersonate-")]


async def test_watch_streams_events_as_they_come(available: Cluster) -> None:
    base = f"{available.https}/apis/{ext.GROUP}/{ext.VERSION}/namespaces/watched/flunders"
    timeout = aiohttp.ClientTimeout(total=15)
    async with aiohttp.ClientSession(timeout=timeout) as http, http.get(base + "?watch=1",
                                                                         ssl=available.tls()) as stream:
        assert stream.status == 200
        async with http.post(base, json={"metadata": {"name": "w1"}}, ssl=available.tls()) as created:
            assert created.status == 201
            assert created.headers["X-Seen-User"] == "kubernetes-admin"
        assert available.backend.last_post() == (str(len(b'{"metadata": {"name": "w1"}}')), None)
        line = await stream.content.readline()
        event = json.loads(line)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "w1")


@pytest.mark.parametrize("encoding", ["gzip", "identity"])
async def test_an_encoded_answer_is_relayed_as_the_backend_encoded_it(available: Cluster, encoding: str) -> None:
    url = f"{available.https}/apis/{ext.GROUP}/{ext.VERSION}/namespaces/team/flunders"
    async with aiohttp.ClientSession(auto_decompress=False) as http, http.get(
            url, ssl=available.tls(), headers={"Accept-Encoding": encoding}) as resp:
        raw = await resp.read()
        assert resp.headers.get("Content-Encoding") == (encoding if encoding == "gzip" else None)
    body = gzip.decompress(raw) if encoding == "gzip" else raw
    assert json.loads(body)["kind"] == "FlunderList"


async def test_head_is_proxied_without_a_body(available: Cluster) -> None:
    url = f"{available.https}/apis/{ext.GROUP}/{ext.VERSION}/namespaces/team/flunders"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http, http.head(
            url, ssl=available.tls()) as resp:
        assert (resp.status, resp.headers["X-Seen-User"], await resp.read()) == (200, "kubernetes-admin", b"")


async def test_a_client_leaving_a_watch_ends_the_backends(available: Cluster) -> None:
    url = f"{available.https}/apis/{ext.GROUP}/{ext.VERSION}/namespaces/left/flunders?watch=1"
    async with aiohttp.ClientSession() as http:
        async with http.get(url, ssl=available.tls()) as stream:
            assert stream.status == 200
            deadline = time.monotonic() + 5
            while available.backend.watching() == 0:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
        deadline = time.monotonic() + 5
        while available.backend.watching() != 0:  # the proxy closed its connection to the backend
            assert time.monotonic() < deadline, available.backend.watching()
            await asyncio.sleep(0.05)


async def test_impersonated_extra_goes_as_x_remote_extra(available: Cluster) -> None:
    url = f"{available.https}/apis/{ext.GROUP}/{ext.VERSION}/namespaces/team/flunders"
    headers = {"Impersonate-User": "erin", "Impersonate-Group": "wardlers", "Impersonate-Extra-Scopes": "view",
               "X-Remote-User": "mallory"}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers, ssl=available.tls()) as resp:
        assert resp.status == 200
        assert (resp.headers["X-Seen-User"], resp.headers["X-Seen-Groups"], resp.headers["X-Seen-Extra-Scopes"]) == (
            "erin", "wardlers,system:authenticated", "view")


@pytest.mark.parametrize("certificate", ["admin", "none"])
async def test_the_backend_trusts_the_headers_only_over_the_front_proxy_certificate(
        available: Cluster, certificate: str) -> None:
    """What makes the front-proxy certificate matter: the admin's own certificate fails the TLS handshake with
    the backend (not signed by the front-proxy CA), and no certificate is 401 whatever X-Remote-User says."""
    url = f"https://{available.ip}:{available.backend.port}/apis/{ext.GROUP}/{ext.VERSION}"
    context = ssl.create_default_context(cadata=available.backend.ca_pem.decode())
    context.check_hostname = False
    if certificate == "admin":
        certs = pki.CertDir(available.data / "pki")
        context.load_cert_chain(certs.admin_cert, certs.admin_key)
    async with aiohttp.ClientSession() as http:
        if certificate == "admin":
            with pytest.raises(aiohttp.ClientError):
                async with http.get(url, ssl=context, headers={"X-Remote-User": "mallory"}) as resp:
                    await resp.read()
            return
        async with http.get(url, ssl=context, headers={"X-Remote-User": "mallory"}) as resp:
            assert resp.status == 401


async def test_metrics_count_proxied_requests_and_unavailable_apiservices(available: Cluster) -> None:
    assert available.admin("get", "flunders", "-n", "team", "-o", "name").code == 0
    async with aiohttp.ClientSession() as http, http.get(available.https + "/metrics", ssl=available.tls()) as resp:
        text = await resp.text()
    assert f'aggregator_unavailable_apiservice{{name="{APISERVICE}"}} 0.0' in text
    wanted = {'code="200"', f'group="{ext.GROUP}"', 'resource="flunders"', 'scope="namespace"', 'verb="LIST"'}
    counted = [line for line in text.splitlines() if line.startswith("apiserver_request_total{")
               and wanted <= set(line.partition("{")[2].partition("}")[0].split(","))]
    assert len(counted) == 1 and float(counted[0].rpartition(" ")[2]) >= 1, counted


# --- discovery ----------------------------------------------------------------------------------------------

async def test_discovery_lists_the_backends_group(available: Cluster) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(available.https + "/apis", ssl=available.tls()) as resp:
            groups = {g["name"]: g for g in (await resp.json())["groups"]}
        assert groups[ext.GROUP]["preferredVersion"] == {"groupVersion": ext.GV, "version": ext.VERSION}
        async with http.get(available.https + f"/apis/{ext.GROUP}", ssl=available.tls()) as resp:
            assert (await resp.json())["versions"] == [{"groupVersion": ext.GV, "version": ext.VERSION}]
        async with http.get(available.https + f"/apis/{ext.GROUP}/{ext.VERSION}", ssl=available.tls()) as resp:
            assert await resp.json() == ext.RESOURCES  # the backend's own answer, proxied
        accept = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        async with http.get(available.https + "/apis", headers={"Accept": accept}, ssl=available.tls()) as resp:
            items = {i["metadata"]["name"]: i for i in (await resp.json())["items"]}
    assert items[ext.GROUP]["versions"] == [{
        "version": ext.VERSION, "freshness": "Current",
        # kube-aggregator 1.28 converts a backend's APIResourceList as it is: its entries name no group version
        "resources": [{"resource": "flunders", "responseKind": {"group": "", "version": "", "kind": "Flunder"},
                       "scope": "Namespaced", "singularResource": "flunder",
                       "verbs": ["create", "get", "list", "watch"], "shortNames": ["fl"],
                       "subresources": [{"subresource": "status", "responseKind": {
                           "group": "", "version": "", "kind": "Flunder"}, "verbs": ["get"]}]}],
    }]


async def test_openapi_includes_the_backends_document(available: Cluster) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(available.https + "/openapi/v3", ssl=available.tls()) as resp:
            url = (await resp.json())["paths"][f"apis/{ext.GROUP}/{ext.VERSION}"]["serverRelativeURL"]
        async with http.get(available.https + url, ssl=available.tls()) as resp:
            assert await resp.json() == ext.OPENAPI_V3
        async with http.get(available.https + "/openapi/v2", ssl=available.tls()) as resp:
            v2 = await resp.json()
    flunder = v2["definitions"]["com.example.wardle.v1alpha1.Flunder"]
    assert flunder["properties"]["spec"] == {"type": "object", "properties": {"reference": {"type": "string"}}}
    assert v2["paths"][f"{ext.BASE}/namespaces/{{namespace}}/flunders/{{name}}"]["get"]["responses"]["200"] == {
        "description": "OK", "schema": {"$ref": "#/definitions/com.example.wardle.v1alpha1.Flunder"}}


def test_kubectl_explain_reads_the_backends_schema(available: Cluster) -> None:
    ran = available.admin("explain", "flunders.spec")
    assert ran.code == 0, ran.err
    assert "reference" in ran.out


def test_kubectl_api_resources_lists_the_aggregated_resource(available: Cluster) -> None:
    ran = available.admin("api-resources", f"--api-group={ext.GROUP}", "--no-headers")
    assert ran.code == 0, ran.err
    assert ran.out.split() == ["flunders", "fl", ext.GV, "true", "Flunder"]


# --- what an extension API server reads at start ----------------------------------------------------------

def test_the_authentication_config_map_tells_backends_whom_to_trust(cluster: Cluster) -> None:
    certs = pki.CertDir(cluster.data / "pki")
    data = cluster.admin.json("get", "configmap", "extension-apiserver-authentication", "-n", "kube-system",
                              "-o", "json")["data"]
    assert data == {
        "client-ca-file": certs.ca_cert.read_text(),
        "requestheader-client-ca-file": certs.front_proxy_ca_cert.read_text(),
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        "requestheader-allowed-names": '["front-proxy-client"]',
    }
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "wardle-auth-reader", "namespace": "kube-system"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "extension-apiserver-authentication-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "api", "namespace": "wardle"}]}
    cluster.apply(binding)
    ran = cluster.admin("auth", "can-i", "get", "configmap/extension-apiserver-authentication", "-n", "kube-system",
                        "--as=system:serviceaccount:wardle:api")
    assert (ran.code, ran.out) == (0, "yes\n"), ran.err


# --- the split form -----------------------------------------------------------------------------------------

def test_split_form_gateway_proxies_what_the_core_allowed(tmp_path: Path) -> None:
    ip = _host_ip()
    if ip is None:
        pytest.skip("no non-loopback address to put in Endpoints")
    (tmp_path / "tokens.csv").write_text(TOKENS_CSV)
    procs: list[subprocess.Popen[str]] = []
    backend: ext.ExtensionServer | None = None
    data = tmp_path / "data"
    try:
        core = _launch(procs, "core", "--data-dir", str(data), "--grpc-port", "0", "--grpc-mtls-port", "0",
                       "--sync", "false", "--token-auth-file", str(tmp_path / "tokens.csv"),
                       pattern=re.compile(r"gRPC-mTLS (\S+)"))
        gateway = _launch(procs, "gateway", "--core", core[1], "--data-dir", str(data), "--secure-port", "0",
                          pattern=re.compile(r"HTTPS (https://\S+)"))
        cluster = _cluster(tmp_path, gateway[1], ip)
        backend = cluster.backend
        cluster.apply(api_service(ca_bundle=backend.ca_pem))
        cluster.wait_condition("True", "Passed")
        flunder = {"apiVersion": ext.GV, "kind": "Flunder", "metadata": {"name": "split", "namespace": "team"}}
        assert cluster.admin("create", "-f", "-", input=json.dumps(flunder)).code == 0
        deadline = time.monotonic() + CONDITION_TIMEOUT
        while (ran := cluster.as_token(DAVE_TOKEN)("get", "flunders", "-n", "team", "-o", "name")).code != 0:
            assert time.monotonic() < deadline, ran.err  # the gateway learns the group from the core's Discover
            time.sleep(0.5)
        assert ran.out == f"flunder.{ext.GROUP}/split\n"
        assert backend.seen[-1]["X-Remote-User"] == ["dave"]
        refused = cluster.as_token(CAROL_TOKEN)("get", "flunders", "-n", "team")
        assert refused.code == 1 and 'User "carol" cannot list resource "flunders"' in refused.err
        # the backend goes away while still Available (the next check is up to 30 s off): kube's dial error
        backend.stop()
        code, body = _proxied_get(cluster)
        assert (code, body) == (503, f"dial tcp {ip}:{backend.port}: connect: connection refused\n")
    finally:
        if backend is not None:
            backend.stop()
        _stop(procs)
