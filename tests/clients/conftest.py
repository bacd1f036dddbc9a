"""One secure `capstan serve` (TLS gRPC, a static bearer token in system:masters) for clients in other
languages, and the tools they need: a test whose tool is missing skips and says which (`.ci/run` installs
them)."""

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

from tests.e2e.conftest import ROOT, START_TIMEOUT, _Lines

SERVING = re.compile(r"capstan serving: HTTPS (https://\S+) gRPC (\S+) gRPC-mTLS (\S+)")
TOKEN = "node-root-token-0123456789"  # a static token user in system:masters


@dataclass(frozen=True)
class Secure:
    grpc: str  # host:port of the TLS gRPC port (bearer tokens)
    ca: Path  # the CA that signed the serving certificate
    token: str


def tool(name: str, why: str) -> str:
    """The path of `name` on PATH (or in the venv), or a skip saying what is missing and why it is wanted."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed ({why}); .ci/run installs it")
    return found


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    base = tmp_path_factory.mktemp("clients")
    data = base / "data"
    (base / "tokens.csv").write_text(f"{TOKEN},root,uid-root,system:masters\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--data-dir", str(data), "--secure-port", "0", "--grpc-port", "0",
         "--grpc-mtls-port", "0", "--sync", "false", "--token-auth-file", str(base / "tokens.csv")],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    log = _Lines(proc.stderr)
    try:
        match = log.expect(SERVING, START_TIMEOUT)
        if match is None:
            pytest.fail(f"capstan serve did not start listening within {START_TIMEOUT}s:\n{log.rest()}")
        yield Secure(match[2], data / "pki" / "ca.crt", TOKEN)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
