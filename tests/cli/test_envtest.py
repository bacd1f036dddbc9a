"""controller-runtime 0.16's envtest starting Capstan as its kube-apiserver, reproduced step by step in Python
(pkg/internal/testing/controlplane/{apiserver,auth,plane}.go, process/process.go, certs/tinyca.go):

1. `capstan envtest-assets DIR` lays out KUBEBUILDER_ASSETS; envtest runs DIR/kube-apiserver and DIR/etcd;
2. etcd starts first (the official binary, as the other etcd tests start it: tests/storage/etcd_server.py);
3. envtest's tiny CAs (ECDSA P-256, "envtest-environment"): it writes the serving pair apiserver.crt/key into
   --cert-dir, the service-account signer sa-signer.crt/key, and its client CA client-cert-auth-ca.crt;
4. it asks `kube-apiserver --help` whether `--insecure-port` exists (1.28's has none: it is left out);
5. it passes its flags as its Arguments.AsStrings renders them: sorted, `--name=value`;
6. it polls https://ADDR/healthz every 100 ms without credentials, skipping TLS verification, until a 200;
7. it provisions its users with client certificates from its own CA (`admin` and `default`, system:masters),
   and the client trusts only envtest's serving CA.
Then the API is driven with those credentials by the official Python client: a ConfigMap created, read, listed
and watched, and a CRD installed and served.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from tests.cli.envtest_support import TinyCA, envtest_flags, poll_healthz, write_cert_dir
from tests.storage.etcd_server import EtcdServer, free_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0  # envtest's own is 20 s; the shared test machine gets more, start-up time is a benchmark's
CRD_GROUP = "envtest.capstan.dev"


def meta(obj: Any) -> client.V1ObjectMeta:
    got = obj.metadata
    assert isinstance(got, client.V1ObjectMeta), obj
    return got


@dataclass
class ControlPlane:
    process: subprocess.Popen[bytes]
    address: str  # https://127.0.0.1:PORT
    serving_ca: bytes
    users: TinyCA
    cert_dir: Path
    args: list[str]
    stderr: Path

    def config(self, user: str, groups: list[str], base: Path) -> client.ApiClient:
        """AddUser: a client certificate from envtest's own CA; the client trusts envtest's serving CA."""
        pair = self.users.client(user, groups)
        (base / f"{user}.crt").write_bytes(pair.cert_pem())
        (base / f"{user}.key").write_bytes(pair.key_pem())
        (base / "serving-ca.crt").write_bytes(self.serving_ca)
        configuration = client.Configuration()
        configuration.host = self.address
        configuration.cert_file = str(base / f"{user}.crt")
        configuration.key_file = str(base / f"{user}.key")
        configuration.ssl_ca_cert = str(base / "serving-ca.crt")
        return client.ApiClient(configuration)


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("assets")
    ran = subprocess.run([sys.executable, "-m", "capstan", "envtest-assets", str(directory)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert Path(ran.stdout.strip()) == directory
    return directory


@pytest.fixture(scope="module")
def plane(assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    etcd = EtcdServer(tmp_path_factory.mktemp("etcd"))
    etcd.start()
    cert_dir = tmp_path_factory.mktemp("k8s_test_framework_")
    written = write_cert_dir(cert_dir)
    port = free_port()
    address = f"https://127.0.0.1:{port}"
    binary = assets / "kube-apiserver"
    args = envtest_flags(cert_dir, etcd.url, port, binary)
    stderr = cert_dir.parent / "kube-apiserver.log"
    with stderr.open("wb") as log:
        process = subprocess.Popen([str(binary), *args], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   cwd=cert_dir.parent, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        poll_healthz(address + "/healthz", process, START_TIMEOUT)
        yield ControlPlane(process, address, written.serving_ca.ca.cert_pem(), written.users, cert_dir, args, stderr)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # envtest's Stop: SIGTERM, 20 s
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        etcd.stop()


def test_envtest_flags_need_no_insecure_port(plane: ControlPlane) -> None:
    assert not any(arg.startswith("--insecure-port") for arg in plane.args)
    assert plane.args[0].startswith("--allow-privileged=") and "--etcd-servers=" in " ".join(plane.args)


def test_the_serving_pair_in_cert_dir_is_served_as_given(plane: ControlPlane) -> None:
    """The client trusts only envtest's serving CA: the handshake proves apiserver.crt was served unchanged."""
    context = ssl.create_default_context(cadata=plane.serving_ca.decode())
    with urllib.request.urlopen(plane.address + "/version", context=context, timeout=10) as answer:
        assert answer.status == 200
    served = ssl.get_server_certificate(("127.0.0.1", int(plane.address.rsplit(":", 1)[1])))
    assert served.encode().strip() == (plane.cert_dir / "apiserver.crt").read_bytes().strip()
    assert not (plane.cert_dir / "sa.key").exists()  # envtest's signer is used: no key of Capstan's is made


@pytest.mark.parametrize("user", ["admin", "default"])
def test_envtest_users_drive_configmaps(plane: ControlPlane, tmp_path: Path, user: str) -> None:
    api = client.CoreV1Api(plane.config(user, ["system:masters"], tmp_path))
    namespace = f"envtest-{user}"
    api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)), _request_timeout=10)
    created = api.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"mode": "envtest"}),
        _request_timeout=10)
    got = api.read_namespaced_config_map("settings", namespace, _request_timeout=10)
    assert (got.data, meta(got).uid) == ({"mode": "envtest"}, meta(created).uid)
    listed = api.list_namespaced_config_map(namespace, _request_timeout=10)
    assert "settings" in [meta(item).name for item in listed.items]
    assert listed.metadata is not None
    watcher = watch.Watch()  # type: ignore[no-untyped-call]
    events = watcher.stream(api.list_namespaced_config_map, namespace,  # type: ignore[no-untyped-call]
                            resource_version=listed.metadata.resource_version, timeout_seconds=10,
                            _request_timeout=15)
    api.patch_namespaced_config_map("settings", namespace, {"data": {"mode": "watched"}}, _request_timeout=10)
    first = next(events)
    assert (first["type"], first["object"].data) == ("MODIFIED", {"mode": "watched"})


def test_envtest_installs_a_crd_and_uses_it(plane: ControlPlane, tmp_path: Path) -> None:
    """CRDInstallOptions: create the CRD, poll until its group version is served, then use the kind."""
    api_client = plane.config("admin", ["system:masters"], tmp_path)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{CRD_GROUP}"},
        "spec": {"group": CRD_GROUP, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]},
    }
    client.ApiextensionsV1Api(api_client).create_custom_resource_definition(
        crd, _request_timeout=10)  # type: ignore[arg-type]  # the client sends a dict as it is
    custom = client.CustomObjectsApi(api_client)
    deadline = time.monotonic() + 30
    while True:
        try:
            resources = custom.get_api_resources(CRD_GROUP, "v1", _request_timeout=10)
            if any(r.name == "widgets" for r in resources.resources):
                break
        except ApiException as err:
            if err.status != 404:
                raise
        assert time.monotonic() < deadline, "the CRD was not served in time"
        time.sleep(0.1)
    body = {"apiVersion": f"{CRD_GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}}
    custom.create_namespaced_custom_object(CRD_GROUP, "v1", "default", "widgets", body, _request_timeout=10)
    got: Any = custom.get_namespaced_custom_object(CRD_GROUP, "v1", "default", "widgets", "w", _request_timeout=10)
    assert got["spec"] == {"size": 3}


def test_service_account_tokens_are_signed_with_envtests_signer(plane: ControlPlane, tmp_path: Path) -> None:
    """TokenRequest signs with sa-signer.key (ECDSA: ES256); the token authenticates (GET /api, which
    system:discovery grants to every authenticated user)."""
    api = client.CoreV1Api(plane.config("admin", ["system:masters"], tmp_path))
    api.create_namespaced_service_account("default", client.V1ServiceAccount(
        metadata=client.V1ObjectMeta(name="robot")), _request_timeout=10)
    review = api.create_namespaced_service_account_token("robot", "default", client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[])), _request_timeout=10)
    assert review.status is not None
    token = str(review.status.token)
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["alg"] == "ES256"
    context = ssl.create_default_context(cadata=plane.serving_ca.decode())
    request = urllib.request.Request(plane.address + "/api", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        assert answer.status == 200


def test_an_unknown_user_certificate_is_refused(plane: ControlPlane, tmp_path: Path) -> None:
    """A certificate from envtest's CA authenticates; a user without a binding is forbidden (RBAC)."""
    api = client.CoreV1Api(plane.config("nobody", [], tmp_path))
    with pytest.raises(ApiException) as refused:
        api.list_namespaced_config_map("default", _request_timeout=10)
    assert refused.value.status == 403
    assert json.loads(str(refused.value.body))["message"] == (
        'configmaps is forbidden: User "nobody" cannot list resource "configmaps" in API group "" in the '
        'namespace "default"')


def test_no_controller_manager_runs(plane: ControlPlane, tmp_path: Path) -> None:
    """As a bare kube-apiserver: no default ServiceAccount is made in a new namespace."""
    api = client.CoreV1Api(plane.config("admin", ["system:masters"], tmp_path))
    api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="bare")), _request_timeout=10)
    time.sleep(1)
    assert api.list_namespaced_service_account("bare", _request_timeout=10).items == []


def test_stops_on_sigterm(plane: ControlPlane) -> None:
    """Last: envtest's Stop sends SIGTERM and waits; the process exits cleanly."""
    plane.process.send_signal(signal.SIGTERM)
    assert plane.process.wait(20) == 0, plane.stderr.read_text()[-2000:]
