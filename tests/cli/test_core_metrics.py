"""`capstan core --metrics-port`: /metrics of a core without a gateway, over HTTPS with the serving certificate,
secured as kube-apiserver's (authenticated, and allowed the non-resource `get /metrics`); and the flags logged
at -v=1 as kube logs its command line."""

from __future__ import annotations

import os
import re
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import ClientSession

from capstan.cli import pki

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"capstan core metrics: https://\S+:(\d+)/metrics")


@dataclass
class Core:
    proc: subprocess.Popen[str]
    port: int
    data: Path
    log: list[str]


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Core]:
    data = tmp_path_factory.mktemp("core") / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "core", "--data-dir", str(data), "--grpc-port", "0", "--grpc-mtls-port",
         "0", "--metrics-port", "0", "--sync", "false", "-v", "1"],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:
        lines.append(line)
        if match := READY.search(line):
            break
    else:
        raise AssertionError(f"capstan core exited with {proc.wait()}: {''.join(lines)}")
    try:
        yield Core(proc, int(match.group(1)), data, lines)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


@pytest.mark.parametrize(("who", "status", "figure"), [
    ("admin", 200, "apiserver_request_total"),  # system:masters
    ("admin", 200, "process_cpu_seconds_total"),
    ("admin", 200, "apiserver_storage_objects{resource=\"namespaces\"}"),
    ("admin", 200, "authentication_attempts_total"),
    ("admin", 200, "apiserver_flowcontrol_nominal_limit_seats"),
    ("anonymous", 403, "forbidden: User \\\"system:anonymous\\\" cannot get path \\\"/metrics\\\""),
    ("bad-token", 401, "Unauthorized"),
])
async def test_metrics_port(core: Core, who: str, status: int, figure: str) -> None:
    certs = pki.CertDir(core.data / "pki")
    context = ssl.create_default_context(cafile=certs.ca_cert)
    headers = {"Authorization": "Bearer not-a-token"} if who == "bad-token" else {}
    if who == "admin":
        context.load_cert_chain(certs.admin_cert, certs.admin_key)
    url = f"https://127.0.0.1:{core.port}/metrics"
    async with ClientSession() as http, http.get(url, ssl=context, headers=headers) as resp:
        body = await resp.text()
    assert resp.status == status, body
    assert figure in body


@pytest.mark.parametrize("line", [
    'FLAG: --metrics-port="0"',
    'FLAG: --v="1"',
    'FLAG: --logging-format="text"',
    'FLAG: --authorization-mode="RBAC"',
])
def test_flags_logged_at_v1(core: Core, line: str) -> None:
    flags = [entry.split("] ", 1)[1].rstrip("\n") for entry in core.log if "FLAG: " in entry]
    assert line in flags
