"""`capstan serve --health-port`: a real process answers the health endpoints on a port of their own, the
serving port's answers, and stops it cleanly with the rest."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import ClientSession

ROOT = Path(__file__).resolve().parents[2]
HEALTH = re.compile(r"capstan health: http://127\.0\.0\.1:(\d+)")
LISTENING = re.compile(r"capstan serving: HTTP http://127\.0\.0\.1:(\d+)")


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/readyz?verbose", "/livez/etcd", "/nope"])
async def test_serve_answers_on_the_health_port(tmp_path: Path, path: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(tmp_path / "data"),
         "--http-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1", "--health-port", "0"],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    ports: dict[str, int] = {}
    try:
        for line in proc.stderr:
            for name, pattern in (("health", HEALTH), ("serving", LISTENING)):
                if match := pattern.search(line):
                    ports[name] = int(match[1])
            if len(ports) == 2:
                break
        assert len(ports) == 2, f"capstan serve exited with {proc.wait()} before listening"
        async with ClientSession() as http:
            for _ in range(100):  # readyz waits for the controllers' first lists, as on the serving port
                answers = []
                for port in (ports["serving"], ports["health"]):
                    async with http.get(f"http://127.0.0.1:{port}{path}") as resp:
                        answers.append((resp.status, await resp.text()))
                if answers[0] == answers[1]:
                    break
                await asyncio.sleep(0.1)
        assert answers[1] == answers[0]
        assert answers[0][0] == (404 if path == "/nope" else 200)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 10)
    assert code == 0


# What kube's e2e "health handlers should contain necessary checks" (test/e2e/apimachinery/health_handlers.go,
# v1.28) requires of /healthz?verbose=1 and /livez?verbose=1; /readyz?verbose=1 also needs informer-sync.
E2E_REQUIRED = ["ping", "log", "etcd", *(f"poststarthook/{hook}" for hook in (
    "start-kube-apiserver-admission-initializer", "generic-apiserver-start-informers",
    "start-apiextensions-informers", "start-apiextensions-controllers", "crd-informer-synced", "bootstrap-controller",
    "start-system-namespaces-controller", "start-service-ip-repair-controllers",
    "scheduling/bootstrap-system-priority-classes", "start-cluster-authentication-info-controller",
    "start-kube-aggregator-informers", "apiservice-registration-controller",
    "apiservice-status-available-controller", "kube-apiserver-autoregistration")),
    "autoregister-completion", "poststarthook/apiservice-openapi-controller"]


async def test_a_secure_server_lists_every_check_kubes_e2e_requires(tmp_path: Path) -> None:
    """The secure default (RBAC) also runs kube's RBAC bootstrap hook, in kube's place among the others."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--workers", "1", "--data-dir", str(tmp_path / "data"),
         "--secure-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1", "--health-port", "0"],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    try:
        port = 0
        for line in proc.stderr:
            if match := HEALTH.search(line):
                port = int(match[1])
                break
        assert port, f"capstan serve exited with {proc.wait()} before listening"
        async with ClientSession() as http:
            for endpoint in ("healthz", "livez", "readyz"):
                for _ in range(100):
                    async with http.get(f"http://127.0.0.1:{port}/{endpoint}?verbose=1") as resp:
                        status, lines = resp.status, (await resp.text()).splitlines()
                    if status == 200:
                        break
                    await asyncio.sleep(0.1)
                assert status == 200, lines
                required = [*E2E_REQUIRED, *(["informer-sync"] if endpoint == "readyz" else [])]
                assert [name for name in required if f"[+]{name} ok" not in lines] == [], endpoint
                hooks = [line for line in lines if line.startswith("[+]poststarthook/")]
                rbac = hooks.index("[+]poststarthook/rbac/bootstrap-roles ok")
                assert hooks[rbac - 1:rbac + 2] == ["[+]poststarthook/start-service-ip-repair-controllers ok",
                                                    "[+]poststarthook/rbac/bootstrap-roles ok",
                                                    "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok"]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 10)
    assert code == 0
