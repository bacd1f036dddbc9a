"""Capstan on a real etcd, as processes a user starts: `capstan serve`, `capstan core` and `capstan gateway`.

Every process gets `--etcd-servers` and a prefix of its test's own, so tests sharing the session's etcd
never see each other's objects. Leader election runs with short durations (a 2 s lease) so failover fits
in a test. Nothing here can hang: processes are waited for with deadlines and killed when a test ends.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import LISTENING, ROOT, START_TIMEOUT, Obj, _Lines
from tests.storage.etcd_server import EtcdServer

CORE_LISTENING = re.compile(r"capstan core serving: gRPC (\S+)")
GATEWAY_LISTENING = re.compile(r"capstan gateway serving: HTTP (http://\S+)")
# kube-controller-manager's 15/10/2 s, shortened so a standby takes over within a test's bounds.
ELECTION = ("--leader-elect-lease-duration", "2", "--leader-elect-renew-deadline", "1.5",
            "--leader-elect-retry-period", "0.25")

@dataclass
class Process:
    """One capstan child process and the address it logged."""

    proc: subprocess.Popen[str]
    log: _Lines = field(repr=False)
    address: str

    def kill(self) -> None:
        """SIGKILL: no clean stop, no Lease released, calls in flight cut off."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

def spawn(args: list[str], listening: re.Pattern[str]) -> Process:
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    log = _Lines(proc.stderr)
    match = log.expect(listening, START_TIMEOUT)
    if match is None:
        proc.kill()
        proc.wait()
        pytest.fail(f"capstan {args[0]} did not start within {START_TIMEOUT}s:\n{log.rest()}")
    return Process(proc, log, match[1])

class Fleet:
    """The processes of one test over one etcd prefix; all stopped (killed if need be) when the test ends."""

    def __init__(self, servers: str, base: Path) -> None:
        self.servers = servers
        self.prefix = "/capstan-e2e/" + uuid.uuid4().hex[:12]
        self.base = base
        self.processes: list[Process] = []

    def _etcd(self, name: str) -> list[str]:
        # One process a core: a test that kills a core kills that process, as it would one kube-apiserver.
        return ["--insecure", "--workers", "1", "--etcd-servers", self.servers, "--etcd-prefix", self.prefix,
                "--data-dir", str(self.base / name)]

    def serve(self, name: str = "serve", *extra: str) -> Process:
        args = ["serve", *self._etcd(name), "--http-port", "0", "--grpc-port", "0", *ELECTION, *extra]
        return self._add(spawn(args, LISTENING))

    def core(self, name: str, *extra: str) -> Process:
        return self._add(spawn(["core", *self._etcd(name), "--grpc-port", "0", *ELECTION, *extra], CORE_LISTENING))

    def gateway(self, name: str, cores: list[Process]) -> Process:
        args = ["gateway", "--insecure", "--core", ",".join(c.address for c in cores),
                "--data-dir", str(self.base / name), "--http-port", "0"]
        return self._add(spawn(args, GATEWAY_LISTENING))

    def _add(self, process: Process) -> Process:
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in reversed(self.processes):
            process.stop()

@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    """One real etcd for the etcd e2e tests of the session."""
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    yield server
    server.stop()

@pytest.fixture
def fleet(etcd: EtcdServer, tmp_path: Path) -> Iterator[Fleet]:
    fleet = Fleet(etcd.url, tmp_path)
    yield fleet
    fleet.close()

@dataclass(frozen=True)
class Answer:
    code: int
    headers: dict[str, str]
    body: Obj

def call(url: str, method: str, path: str, body: Obj | None = None, *, timeout: float = 10.0) -> Answer:
    """One JSON request; never raises for an HTTP status."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Answer(resp.status, dict(resp.headers), json.loads(resp.read()))
    except urllib.error.HTTPError as err:
        return Answer(err.code, dict(err.headers), json.loads(err.read() or b"{}"))

def configmap(name: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}

def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}

def readyz(url: str, timeout: float = 5.0) -> tuple[int, str]:
    req = urllib.request.Request(url + "/readyz?verbose", method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
