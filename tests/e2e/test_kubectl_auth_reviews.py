"""`kubectl auth can-i` (with and without --list) and `kubectl auth whoami` against a secure `capstan serve`
(RBAC, a token file): the answers come from SelfSubjectAccessReview, SelfSubjectRulesReview and
SelfSubjectReview, which kube's bootstrap policy lets every authenticated user create."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SECURE = re.compile(r"capstan serving: HTTPS https://\S+:(\d+) ")
KUBECTL = shutil.which("kubectl")
ALICE = "alice-token"

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


@dataclass
class Cluster:
    admin: Path  # kubeconfig of the generated admin (system:masters)
    alice: Path  # the same cluster, as the token file's user alice
    cache: Path


def _kubectl(kubeconfig: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("reviews")
    tokens = tmp / "tokens.csv"
    tokens.write_text(f'{ALICE},alice,42,"team-a"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(tmp / "data"), "--secure-port", "0",
         "--grpc-port", "0", "--grpc-mtls-port", "0", "--sync", "false", "--token-auth-file", str(tokens)],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    try:
        if not any(SECURE.search(line) for line in proc.stderr):
            raise AssertionError(f"capstan serve exited with {proc.wait()} before listening")
        printed = subprocess.run([sys.executable, "-m", "capstan", "kubeconfig", "--data-dir", str(tmp / "data")],
                                 cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
        admin, alice = tmp / "admin.yaml", tmp / "alice.yaml"
        admin.write_text(printed)
        config = yaml.safe_load(printed)
        config["users"][0]["user"] = {"token": ALICE}
        alice.write_text(yaml.safe_dump(config))
        cluster = Cluster(admin, alice, tmp / "cache")
        for args in (["create", "namespace", "team"],
                     ["-n", "team", "create", "role", "pod-reader", "--verb=get,list", "--resource=pods"],
                     ["-n", "team", "create", "rolebinding", "alice-reads", "--role=pod-reader", "--user=alice"]):
            out = _kubectl(admin, cluster.cache, *args)
            assert out.returncode == 0, out.stderr
        yield cluster
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


@pytest.mark.parametrize(("args", "answer", "code"), [
    (["list", "pods", "-n", "team"], "yes", 0),
    (["get", "pods/web", "-n", "team"], "yes", 0),
    (["delete", "pods", "-n", "team"], "no", 1),
    (["list", "pods", "-n", "default"], "no", 1),
    (["list", "secrets", "-n", "team"], "no", 1),
    (["get", "/healthz"], "yes", 0),
    (["create", "selfsubjectaccessreviews.authorization.k8s.io"], "yes", 0),
])
def test_can_i_as_alice(cluster: Cluster, args: list[str], answer: str, code: int) -> None:
    out = _kubectl(cluster.alice, cluster.cache, "auth", "can-i", *args)
    assert (out.stdout.strip(), out.returncode) == (answer, code), out.stderr


def test_can_i_for_alice_as_the_admin_via_impersonation(cluster: Cluster) -> None:
    out = _kubectl(cluster.admin, cluster.cache, "auth", "can-i", "list", "pods", "-n", "team", "--as=alice")
    assert (out.stdout.strip(), out.returncode) == ("yes", 0), out.stderr


def test_can_i_list_shows_alices_rules(cluster: Cluster) -> None:
    out = _kubectl(cluster.alice, cluster.cache, "auth", "can-i", "--list", "-n", "team")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert ["pods", "[]", "[]", "[get", "list]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows
    assert ["[/healthz]", "[]", "[get]"] in rows


@pytest.mark.parametrize(("who", "lines"), [
    ("alice", ["Username alice", "UID 42", "Groups [team-a system:authenticated]"]),
    ("admin", ["Username kubernetes-admin", "Groups [system:masters system:authenticated]"]),
])
def test_whoami(cluster: Cluster, who: str, lines: list[str]) -> None:
    out = _kubectl(cluster.alice if who == "alice" else cluster.admin, cluster.cache, "auth", "whoami")
    assert out.returncode == 0, out.stderr
    got = [" ".join(line.split()) for line in out.stdout.splitlines()[1:]]
    assert got == lines
