"""kr8s, a third-party client, against a secure `capstan serve` and the kubeconfig `capstan kubeconfig`
prints: kr8s asks `/version/` (with the trailing slash) before its calls, reads the user from the kubeconfig and
speaks plain REST, so each step here is one thing kr8s users do first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kr8s
import pytest
from kr8s import Api
from kr8s.objects import ConfigMap

from tests.e2e.conftest import ROOT, START_TIMEOUT, _Lines, terminate, write_kubeconfig

SERVING = re.compile(r"capstan serving: HTTPS (https://\S+) gRPC (\S+) gRPC-mTLS (\S+)")


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("kr8s")
    data = base / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(data), "--secure-port", "0", "--grpc-port", "0",
         "--grpc-mtls-port", "0", "--sync", "false"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    log = _Lines(proc.stderr)
    try:
        if log.expect(SERVING, START_TIMEOUT) is None:
            pytest.fail(f"capstan serve did not start listening within {START_TIMEOUT}s:\n{log.rest()}")
        path = base / "kubeconfig"
        write_kubeconfig(data, path)
        yield path
    finally:
        terminate(proc)


@pytest.fixture
def api(kubeconfig: Path) -> Api:
    return kr8s.api(kubeconfig=str(kubeconfig))


def test_version(api: Api) -> None:
    version = api.version()
    assert version["major"] == "1" and version["gitVersion"].startswith(f"v1.{version['minor']}.")


def test_get_namespaces(api: Api) -> None:
    names = {ns.name for ns in kr8s.get("namespaces", api=api)}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_create_and_delete_a_config_map(api: Api) -> None:
    config_map = ConfigMap({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "kr8s-made", "namespace": "default"}, "data": {"k": "v"}}, api=api)
    config_map.create()
    fetched = ConfigMap.get("kr8s-made", namespace="default", api=api)
    assert fetched.raw["data"] == {"k": "v"}
    fetched.delete()
    assert not fetched.exists()


def test_whoami_finds_the_kubeconfigs_user(api: Api) -> None:
    # The kubeconfig's admin certificate: kr8s reads its subject from the kubeconfig's user.
    assert api.whoami() == "kubernetes-admin"  # type: ignore[no-untyped-call]
