"""`capstan serve` as a user runs it: a real process, real ports, a real LMDB, clean exit on signals."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import ClientSession
from grpc_health.v1 import health_pb2, health_pb2_grpc

from storage import StoreOptions
from storage.lmdb import LmdbStore

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"HTTP http://127\.0\.0\.1:(\d+) gRPC 127\.0\.0\.1:(\d+)")


def start(data_dir: Path) -> tuple[subprocess.Popen[str], int, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(data_dir), "--http-port", "0",
         "--grpc-port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        match = LISTENING.search(line)
        if match:
            return proc, int(match[1]), int(match[2])
    raise AssertionError(f"capstan serve exited with {proc.wait()} before listening")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_serve_answers_health_and_exits_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    proc, http_port, grpc_port = start(tmp_path / "data")
    try:
        async with ClientSession() as http:
            for path in ("/healthz", "/livez", "/readyz"):
                async with http.get(f"http://127.0.0.1:{http_port}{path}") as resp:
                    assert (resp.status, await resp.text()) == (200, "ok")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            health: Any = health_pb2_grpc.HealthStub(channel)  # the typeshed stub declares no methods on it
            reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        proc.send_signal(sig)
        code = await asyncio.to_thread(proc.wait, 10)
    assert code == 0
    # LMDB was closed cleanly and is reusable: open it again in this process.
    store = await LmdbStore.open(tmp_path / "data" / "lmdb", StoreOptions(compact_interval=0))
    # Every object the start wrote (namespaces, the `kubernetes` Service and its endpoints, default
    # ServiceAccounts, bootstrap policy, ...) was committed: each is one write at least, and more writes (the
    # controllers' Lease renewals) only raise the revision.
    written = (await store.list(b"/")).kvs
    assert len(written) >= 6
    assert store.current_revision() >= 1 + len(written)
    assert [kv.key for kv in (await store.list(b"/core/namespaces/")).kvs] == [
        b"/core/namespaces/default", b"/core/namespaces/kube-node-lease",
        b"/core/namespaces/kube-public", b"/core/namespaces/kube-system",
    ]
    await store.close()


def test_readme_store_example_runs(tmp_path: Path) -> None:
    """The README's Python example is real code: run it as written, in a scratch directory."""
    readme = (ROOT / "README.md").read_text()
    examples = re.findall(r"```python\n(.*?)```", readme, re.S)
    store_example = next(code for code in examples if "LmdbStore" in code)
    code = store_example.replace("/tmp/capstan-demo", str(tmp_path / "demo"))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["Outcome.OK", "EventType.DELETE b'v2'"]


SECURE = re.compile(r"HTTPS https://\S+:(\d+) gRPC \S+:(\d+) gRPC-mTLS \S+:(\d+)")


async def test_readme_grpc_example_runs(tmp_path: Path) -> None:
    """The README's gRPC example, run as written (TLS with the cert dir's CA, a bearer token read from `token`) from
    a directory holding `data/` of a real secure `capstan serve` (on free ports) whose static token file knows it."""
    readme = (ROOT / "README.md").read_text()
    examples = re.findall(r"```python\n(.*?)```", readme, re.S)
    grpc_example = next(code for code in examples if "CoreServiceStub" in code)
    (tmp_path / "tokens.csv").write_text("readme-token,readme-admin,readme-admin-uid,system:masters\n")
    (tmp_path / "token").write_text("readme-token\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(tmp_path / "data"), "--secure-port", "0",
         "--grpc-port", "0", "--grpc-mtls-port", "0", "--sync", "false",
         "--token-auth-file", str(tmp_path / "tokens.csv")],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    try:
        grpc_port = next(int(m.group(2)) for line in proc.stderr if (m := SECURE.search(line)))
        code = grpc_example.replace("127.0.0.1:50051", f"127.0.0.1:{grpc_port}")
        out = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 10)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["{'greeting': 'hello'}", "ConfigMapList 1", "['DELETED']"]


TAKEN_PORT = [
    # a serving command, with {port} the port another process holds, and {data} a fresh data dir
    ["serve", "--insecure", "--data-dir", "{data}", "--workers", "1", "--http-port", "{port}", "--grpc-port", "0"],
    ["serve", "--data-dir", "{data}", "--workers", "1", "--secure-port", "{port}", "--grpc-port", "0",
     "--grpc-mtls-port", "0"],
    ["serve", "--insecure", "--data-dir", "{data}", "--workers", "1", "--http-port", "0", "--grpc-port", "{port}"],
    ["serve", "--data-dir", "{data}", "--workers", "1", "--secure-port", "0", "--grpc-port", "0",
     "--grpc-mtls-port", "{port}"],
    ["core", "--insecure", "--data-dir", "{data}", "--workers", "1", "--grpc-port", "0", "--metrics-port", "{port}"],
    ["gateway", "--insecure", "--core", "127.0.0.1:1", "--http-port", "{port}"],
]


@pytest.mark.parametrize("command", TAKEN_PORT, ids=lambda c: " ".join(c[:2] + c[-2:]))
def test_a_taken_port_ends_the_start_with_its_error_alone(tmp_path: Path, command: list[str]) -> None:
    """Exit 1 with the bind error as the last line: what had started is stopped first, so nothing complains
    about an unclosed session or a server collected after its loop closed."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        argv = [part.format(port=port, data=tmp_path / "data") for part in command]
        out = subprocess.run([sys.executable, "-m", "capstan", *argv], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert str(port) in lines[-1] and lines[-1].startswith("capstan: "), out.stderr
    assert not [line for line in lines if "Traceback" in line or "Unclosed" in line or "Exception" in line], out.stderr
