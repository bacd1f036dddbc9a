"""End to end: the real kube-controller-manager and kube-scheduler 1.28 running a cluster on Capstan.

Capstan serves securely with none of its own kube-controller-manager controllers and two simulated nodes;
kube-controller-manager runs every controller, each as its own ServiceAccount (`--use-service-account-
credentials`, as kubeadm runs it), and kube-scheduler binds the Pods, both with client certificates of their
users (system:kube-controller-manager, system:kube-scheduler) and leader election. What each is allowed is
kube-apiserver's bootstrap policy, so the workloads below reach their ends only when that policy is Capstan's.

The binaries are not part of CI: build them from kube's source (docs/conformance.md) and name them in
$KUBE_CONTROLLER_MANAGER and $KUBE_SCHEDULER; without them the module is skipped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from capstan.cli import pki
from server.startup.controllers import DEFAULT
from tests.e2e.conftest import (
    ROOT,
    START_TIMEOUT,
    Kubectl,
    Obj,
    _Lines,
    client_certificate,
    terminate,
    write_kubeconfig,
)

KCM = os.environ.get("KUBE_CONTROLLER_MANAGER", "")
SCHEDULER = os.environ.get("KUBE_SCHEDULER", "")
pytestmark = pytest.mark.skipif(not (KCM and SCHEDULER),
                                reason="set $KUBE_CONTROLLER_MANAGER and $KUBE_SCHEDULER to kube 1.28's binaries")

SERVING = re.compile(r"capstan serving: HTTPS (https://\S+) ")
TIMEOUT = 60.0  # seconds for a workload to reach its end


@dataclass
class Cluster:
    kubectl: Kubectl
    logs: dict[str, Path]


def _kubeconfig(path: Path, url: str, certs: pki.CertDir, user: str) -> Path:
    key, cert = client_certificate(certs, user)
    (path.parent / f"{path.stem}.key").write_bytes(key)
    (path.parent / f"{path.stem}.crt").write_bytes(cert)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority": str(certs.ca_cert)}}],
        "users": [{"name": "u", "user": {"client-certificate": str(path.parent / f"{path.stem}.crt"),
                                         "client-key": str(path.parent / f"{path.stem}.key")}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("components")
    data = base / "data"
    off = ",".join(f"-{name}" for name in sorted(DEFAULT))
    serve = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(data), "--secure-port", "0", "--grpc-port", "0",
         "--grpc-mtls-port", "0", "--sync", "false", "--workers", "1", "--nodes", "2", f"--controllers={off}"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert serve.stderr is not None
    started: list[subprocess.Popen[Any]] = []
    try:
        match = _Lines(serve.stderr).expect(SERVING, START_TIMEOUT)
        assert match is not None, "capstan serve did not start listening"
        url, certs = match[1], pki.CertDir(data / "pki")
        write_kubeconfig(data, base / "admin.kubeconfig")
        kcm = _kubeconfig(base / "kcm.kubeconfig", url, certs, "system:kube-controller-manager")
        scheduler = _kubeconfig(base / "scheduler.kubeconfig", url, certs, "system:kube-scheduler")
        logs = {"kube-controller-manager": base / "kcm.log", "kube-scheduler": base / "scheduler.log"}
        common = ["--leader-elect=true", "--bind-address=127.0.0.1", "--secure-port=0", "-v=2"]
        for binary, config, log, flags in (
            (KCM, kcm, logs["kube-controller-manager"], [
                "--controllers=*", "--use-service-account-credentials=true",
                f"--service-account-private-key-file={certs.sa_key}",
                f"--root-ca-file={certs.ca_cert}", f"--cluster-signing-cert-file={certs.ca_cert}",
                f"--cluster-signing-key-file={certs.ca_key}"]),
            (SCHEDULER, scheduler, logs["kube-scheduler"], []),
        ):
            with log.open("w") as out:
                started.append(subprocess.Popen(
                    [binary, f"--kubeconfig={config}", f"--authentication-kubeconfig={config}",
                     f"--authorization-kubeconfig={config}", *common, *flags],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT))
        kubectl = Kubectl(base / "admin.kubeconfig", base / "cache")
        until(lambda: kubectl("get", "lease", "kube-controller-manager", "kube-scheduler", "-n", "kube-system"
                              ).code == 0, "both leader leases")
        yield Cluster(kubectl, logs)
    finally:
        for proc in started:
            terminate(proc)
        terminate(serve)


def until(check: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.25)
    pytest.fail(f"not within {timeout}s: {what}")


def _json(kubectl: Kubectl, *args: str) -> Obj:
    ran = kubectl(*args, "-o", "json")
    return json.loads(ran.out) if ran.code == 0 else {}


def test_a_deployment_is_rolled_out_scheduled_and_collected(cluster: Cluster) -> None:
    kc = cluster.kubectl
    assert kc("create", "namespace", "web").code == 0
    assert kc("-n", "web", "create", "deployment", "web", "--image=nginx", "--replicas=3").code == 0
    until(lambda: _json(kc, "-n", "web", "get", "deployment", "web").get("status", {}).get("availableReplicas") == 3,
          "3 available replicas")
    pods = _json(kc, "-n", "web", "get", "pods", "-l", "app=web")["items"]
    assert len(pods) == 3
    assert {p["spec"]["nodeName"] for p in pods} <= {"capstan-node-0", "capstan-node-1"}
    assert kc("-n", "web", "delete", "deployment", "web").code == 0  # background: the garbage collector's
    until(lambda: not _json(kc, "-n", "web", "get", "replicasets,pods").get("items", [None]), "the dependents gone")


def test_foreground_deletion_ends_with_the_owner_gone(cluster: Cluster) -> None:
    """The garbage collector deletes the dependents, then takes the owner's foregroundDeletion finalizer away
    with its metadata client (a PATCH asking for PartialObjectMetadata in protobuf)."""
    kc = cluster.kubectl
    assert kc("create", "namespace", "fore").code == 0
    assert kc("-n", "fore", "create", "deployment", "fg", "--image=nginx", "--replicas=2").code == 0
    until(lambda: _json(kc, "-n", "fore", "get", "deployment", "fg").get("status", {}).get("readyReplicas") == 2,
          "2 ready replicas")
    assert kc("-n", "fore", "delete", "deployment", "fg", "--cascade=foreground", "--wait=false").code == 0
    until(lambda: kc("-n", "fore", "get", "deployment", "fg").code != 0, "the owner gone")
    assert not _json(kc, "-n", "fore", "get", "replicasets,pods").get("items")


def test_a_job_completes(cluster: Cluster) -> None:
    kc = cluster.kubectl
    assert kc("create", "namespace", "batch").code == 0
    assert kc("-n", "batch", "create", "job", "once", "--image=busybox", "--", "sh", "-c", "exit 0").code == 0
    until(lambda: _json(kc, "-n", "batch", "get", "job", "once").get("status", {}).get("succeeded") == 1,
          "the job's success")


def test_a_namespace_is_furnished_and_deleted(cluster: Cluster) -> None:
    kc = cluster.kubectl
    assert kc("create", "namespace", "doomed").code == 0
    until(lambda: kc("-n", "doomed", "get", "serviceaccount", "default").code == 0, "the default ServiceAccount")
    until(lambda: kc("-n", "doomed", "get", "configmap", "kube-root-ca.crt").code == 0, "kube-root-ca.crt")
    assert kc("-n", "doomed", "create", "configmap", "x", "--from-literal=a=b").code == 0
    assert kc("delete", "namespace", "doomed", "--wait=false").code == 0
    until(lambda: kc("get", "namespace", "doomed").code != 0, "the namespace gone")


def test_services_get_endpoints_and_slices(cluster: Cluster) -> None:
    kc = cluster.kubectl
    assert kc("create", "namespace", "svc").code == 0
    assert kc("-n", "svc", "create", "deployment", "db", "--image=x", "--replicas=2", "--port=80").code == 0
    assert kc("-n", "svc", "expose", "deployment", "db", "--port=80").code == 0

    def addresses() -> int:
        subsets = _json(kc, "-n", "svc", "get", "endpoints", "db").get("subsets") or []
        return sum(len(s.get("addresses") or []) for s in subsets)

    until(lambda: addresses() == 2, "two endpoint addresses")
    slices = _json(kc, "-n", "svc", "get", "endpointslices", "-l", "kubernetes.io/service-name=db")["items"]
    assert sum(len(s.get("endpoints") or []) for s in slices) == 2


# What a component logs when the server's answer was not kube-apiserver's: a refusal, an answer it could not
# decode (a metadata client's PATCH answered with the object instead of its PartialObjectMetadata), a list or
# discovery that failed.
FAILURES = re.compile(r"forbidden|unable to decode|failed to list|couldn't get resource list|Failed to watch",
                      re.IGNORECASE)


def test_no_component_failed_a_request(cluster: Cluster) -> None:
    """Run last: every request the components made in the tests above was answered as kube answers it."""
    for component, log in cluster.logs.items():
        failed = [line for line in log.read_text().splitlines() if FAILURES.search(line)]
        assert not failed, f"{component}: " + "\n".join(failed[:5])
