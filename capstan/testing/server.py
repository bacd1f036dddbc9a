"""A throwaway `capstan serve` for a test session: a child process on free ports over a temporary data dir.

A subprocess rather than a thread in the test process: measured, both answer within the same ~0.7-1 s (the
start is imports and the store's bootstrap, which cost the same in either), while a child keeps its own event
loop, GIL, signal handlers and logging away from the tests' — kopf's KopfRunner runs an operator on a thread
of the test process, and a server sharing that process would compete with it for the GIL.

Contract: `start` returns once the server listens on every port, which is when `serve` writes
`<data-dir>/endpoints.json` (removed first, so a restart on the same data dir never reads the last run's
ports); it fails with the server's log when the child exits or the deadline passes. `stop` always reaps it.
The child imports Capstan's packages, never same-named ones of the project under test (serve_command).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

AUDIT_FILE = "audit.log"
AUDIT_POLICY_FILE = "audit-policy.yaml"
ENDPOINTS_FILE = "endpoints.json"  # as capstan/cli/kubeconfig.py names it; not imported, to keep the plugin light
KUBECONFIG_FILE = "kubeconfig.yaml"
POLL = 0.005  # seconds between looks for the endpoints file
STOP_TIMEOUT = 10.0  # seconds for SIGTERM before SIGKILL


class ServerFailed(RuntimeError):
    """The server exited or did not listen in time; the message carries the end of its log."""


@dataclass(frozen=True)
class LocalServer:
    """A running `capstan serve` child: where it listens (endpoints.json's keys), its admin kubeconfig, its log."""

    process: subprocess.Popen[bytes]
    data_dir: Path
    endpoints: dict[str, str]
    kubeconfig: Path
    log: Path
    started_in: float  # seconds from exec to listening
    audit_log: Path | None = None  # every request at level Metadata (capstan/testing/requestlog.py), when asked

    @property
    def url(self) -> str:
        return self.endpoints.get("https") or self.endpoints["http"]

    def stop(self) -> int:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def serve_command(data_dir: Path, *, insecure: bool, extra: tuple[str, ...] = ()) -> list[str]:
    ports = ["--http-port", "0"] if insecure else ["--secure-port", "0", "--grpc-mtls-port", "0"]
    # --sync false: a crash loses acknowledged writes, which a throwaway test store can afford for the speed.
    # -P: the test run's working directory is not put on the child's sys.path, so a module of the project under
    # test never stands in for one Capstan imports; the console script claims Capstan's own `server`, `gateway`
    # and `storage` against PYTHONPATH too (capstan/cli/ownpackages.py). The working directory stays the
    # caller's, so relative paths in --capstan-serve-arg name what they name for the caller. One worker: a test's
    # server starts at once, costs one process's memory, and every cache answers every connection alike (an
    # `extra` --workers, given later, wins).
    return [sys.executable, "-P", "-m", "capstan", "serve", "--data-dir", str(data_dir), "--bind-address", "127.0.0.1",
            "--grpc-port", "0", *ports, *(["--insecure"] if insecure else []), "--sync", "false", "--workers", "1",
            *extra]


def start(data_dir: Path, *, insecure: bool = False, extra: tuple[str, ...] = (), timeout: float = 30.0,
          audit_policy: str | None = None) -> LocalServer:
    """`audit_policy`: an audit.k8s.io/v1 Policy; the server then writes `<data dir>-audit.log`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    audit_log = None
    if audit_policy is not None:
        policy = data_dir.parent / f"{data_dir.name}-{AUDIT_POLICY_FILE}"
        policy.write_text(audit_policy)
        audit_log = data_dir.parent / f"{data_dir.name}-{AUDIT_FILE}"
        extra = (f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}", *extra)
    endpoints_file = data_dir / ENDPOINTS_FILE
    endpoints_file.unlink(missing_ok=True)
    log = data_dir.parent / f"{data_dir.name}.log"
    started = time.perf_counter()
    with log.open("ab") as sink:
        process = subprocess.Popen(serve_command(data_dir, insecure=insecure, extra=extra), stdin=subprocess.DEVNULL,
                                   stdout=sink, stderr=sink, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    while not endpoints_file.exists():
        if process.poll() is not None or time.perf_counter() - started > timeout:
            reason = f"exited with {process.returncode}" if process.returncode is not None else \
                f"did not listen within {timeout:g} s"
            if process.returncode is None:
                process.kill()
                process.wait()
            raise ServerFailed(f"capstan serve {reason}; the end of {log}:\n{_tail(log)}")
        time.sleep(POLL)
    started_in = time.perf_counter() - started
    endpoints: dict[str, str] = json.loads(endpoints_file.read_text())
    kubeconfig = data_dir.parent / f"{data_dir.name}-{KUBECONFIG_FILE}"
    write_private(kubeconfig, _render_kubeconfig(data_dir))  # it holds the admin's private key
    return LocalServer(process, data_dir, endpoints, kubeconfig, log, started_in, audit_log)


def write_private(path: Path, text: str) -> None:
    """Writes a file only its owner can read, from its first byte (a credential is never briefly readable)."""
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(text)


def _render_kubeconfig(data_dir: Path) -> str:
    from capstan.cli import kubeconfig  # the server's own renderer; imported late, it loads cryptography

    return kubeconfig.render(data_dir)


def _tail(path: Path, size: int = 4000) -> str:
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return "(no log)"
