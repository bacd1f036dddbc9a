"""End to end: one real `capstan serve` process per session, driven by the real kubectl and the official client.

The server runs as a user runs it (`python -m capstan serve` on free ports, a
throwaway data dir, the kubeconfig `capstan kubeconfig` prints). Every test works
in its own namespace, so the tests share the server without seeing each other.
Nothing here can hang: every process and every read has a deadline.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client, config

from capstan.cli import pki

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"capstan serving: HTTP (http://\S+) gRPC (\S+)")
START_TIMEOUT = 20.0  # seconds for `capstan serve` to log that it listens
STOP_TIMEOUT = 10.0  # seconds for it to exit after SIGTERM
KUBECTL_TIMEOUT = 30.0  # seconds any one kubectl command may take

Obj = dict[str, Any]


class _Lines:
    """Drains a pipe on a thread, so the child never blocks on a full pipe and readers can wait with a deadline."""

    def __init__(self, pipe: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe: IO[str]) -> None:
        for line in pipe:
            self._queue.put(line)
        self._queue.put(None)

    def expect(self, pattern: str | re.Pattern[str], timeout: float) -> re.Match[str] | None:
        """The first line from now on matching `pattern`, or None when the pipe ends or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        return None

    def rest(self, timeout: float = 5.0) -> str:
        """Everything read so far and until the pipe ends (the child has exited)."""
        self._thread.join(timeout)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.seen.append(line)
        return "".join(self.seen)


@dataclass
class Capstan:
    """A running `capstan serve`: its address, data dir and kubeconfig, and a bare JSON client for setup."""

    url: str
    data_dir: Path
    kubeconfig: Path
    log: _Lines = field(repr=False)

    def request(self, method: str, path: str, body: Obj | list[Any] | None = None, *, timeout: float = 10.0,
                content_type: str = "application/json") -> tuple[int, Obj]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def create(self, path: str, body: Obj) -> Obj:
        code, obj = self.request("POST", path, body)
        assert code == 201, obj
        return obj

    def get(self, path: str) -> tuple[int, Obj]:
        return self.request("GET", path)


@dataclass
class Serving:
    """A `capstan serve` child process and the HTTP address it logged."""

    proc: subprocess.Popen[str]
    log: _Lines
    url: str


def start_capstan(data_dir: Path, *flags: str) -> Serving:
    """`capstan serve --insecure` on free ports, with `flags` beside."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(data_dir),
         "--http-port", "0", "--grpc-port", "0", "--sync", "false", *flags],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    log = _Lines(proc.stderr)
    match = log.expect(LISTENING, START_TIMEOUT)
    if match is None:
        proc.kill()
        proc.wait()
        pytest.fail(f"capstan serve did not start listening within {START_TIMEOUT}s:\n{log.rest()}")
    return Serving(proc, log, match[1])


def terminate(proc: subprocess.Popen[Any], timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM, then its exit code; None if it had not exited within `timeout` (it is killed then)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def stop_capstan(serving: Serving, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM, then its exit code; None if it had not exited within `timeout` (it is killed then)."""
    return terminate(serving.proc, timeout)


def write_kubeconfig(data_dir: Path, path: Path) -> str:
    """Write what `capstan kubeconfig` prints for the server on `data_dir` to `path`; returns the text."""
    printed = subprocess.run(
        [sys.executable, "-m", "capstan", "kubeconfig", "--data-dir", str(data_dir)],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, check=True,
    )
    path.write_text(printed.stdout)
    return printed.stdout


def serving_with(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> Iterator[Capstan]:
    """A `capstan serve --insecure` of a module's own, started with `flags`, and its kubeconfig: what a module
    fixture yields from (the server is stopped when the fixture ends)."""
    base = tmp_path_factory.mktemp(name)
    serving = start_capstan(base / "data", *flags)
    try:
        kubeconfig = base / "kubeconfig"
        write_kubeconfig(base / "data", kubeconfig)
        yield Capstan(serving.url, base / "data", kubeconfig, serving.log)
    finally:
        stop_capstan(serving)


@pytest.fixture(scope="session")
def capstan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capstan]:
    base = tmp_path_factory.mktemp("capstan")
    data_dir = base / "data"
    serving = start_capstan(data_dir)
    try:
        kubeconfig = base / "kubeconfig"
        assert f"server: {serving.url}\n" in write_kubeconfig(data_dir, kubeconfig)
        yield Capstan(serving.url, data_dir, kubeconfig, serving.log)
    finally:
        code = stop_capstan(serving)
        # test_sigterm_is_not_held_up_by_a_watch_whose_client_left is where a slow exit fails; here it warns.
        if code != 0:
            warnings.warn(f"capstan serve: exit code {code} (None: still running {STOP_TIMEOUT}s after SIGTERM, "
                          f"killed)\n{serving.log.rest()}", stacklevel=1)


def client_certificate(certs: pki.CertDir, user: str, *groups: str) -> tuple[bytes, bytes]:
    """(key, certificate) PEM of a client certificate for `user` (CN) in `groups` (O), signed by the cert dir's
    CA, valid for an hour."""
    ca_key: Any = serialization.load_pem_private_key(certs.ca_key.read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate(certs.ca_cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()),
            cert.public_bytes(serialization.Encoding.PEM))


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def stable(obj: Obj) -> Obj:
    """obj with the values no test can predict checked for their form and replaced by placeholders:
    metadata.uid -> "<uid>", resourceVersion -> "<rv>", creationTimestamp and each managedFields
    time -> "<time>". Compare uid and resourceVersion across calls separately."""
    out: Obj = json.loads(json.dumps(obj))
    meta = out["metadata"]
    for key, pattern, placeholder in (("uid", UID, "<uid>"), ("resourceVersion", re.compile(r"[1-9]\d*"), "<rv>"),
                                      ("creationTimestamp", RFC3339, "<time>")):
        if key in meta:
            assert pattern.fullmatch(meta[key]), (key, meta[key])
            meta[key] = placeholder
    for entry in meta.get("managedFields", []):
        if "time" in entry:  # absent when a manager's first apply changed nothing
            assert RFC3339.fullmatch(entry["time"]), entry
            entry["time"] = "<time>"
    return out


def managers(obj: Obj) -> dict[str, tuple[str, Obj]]:
    """metadata.managedFields as {manager: (operation, fieldsV1)}, after checking kube-apiserver's order:
    Apply before Update, then by time (none, left by an apply that changed nothing, first), then by manager."""
    entries = obj["metadata"].get("managedFields", [])
    assert entries == sorted(entries, key=lambda e: (e["operation"], e.get("time", ""), e["manager"])), entries
    assert all((e["apiVersion"], e["fieldsType"]) == ("v1", "FieldsV1") for e in entries), entries
    return {e["manager"]: (e["operation"], e["fieldsV1"]) for e in entries}


def dns_label(text: str, *, suffix: str = "") -> str:
    """A valid, unique-enough RFC 1123 label made from a test's name."""
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    tail = suffix or uuid.uuid4().hex[:6]
    return f"{base[: 62 - len(tail)].rstrip('-')}-{tail}"


@pytest.fixture
def namespace(capstan: Capstan, request: pytest.FixtureRequest) -> str:
    """A fresh namespace for one test (left behind: the session's data dir is thrown away)."""
    name = dns_label(request.node.name)
    capstan.create("/api/v1/namespaces", {"metadata": {"name": name}})
    return name


# -- kubectl -----------------------------------------------------------------------------------------------------------


class Ran(NamedTuple):
    code: int
    out: str
    err: str


def _kubectl_dir() -> Path | None:
    found = shutil.which("kubectl")
    return Path(found).resolve().parent if found else None


class Background:
    """A kubectl left running (get -w): read its output line by line with deadlines, then stop it."""

    def __init__(self, proc: subprocess.Popen[str], args: tuple[str, ...]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self._proc = proc
        self._args = args
        self.stdout = _Lines(proc.stdout)
        self.stderr = _Lines(proc.stderr)

    def expect(self, pattern: str, timeout: float = 10.0) -> str:
        match = self.stdout.expect(pattern, timeout)
        if match is None:
            out = "".join(self.stdout.seen)
            pytest.fail(f"kubectl {' '.join(self._args)}: no line matching {pattern!r} within {timeout}s; "
                        f"stdout so far:\n{out}")
        return match.string

    def stderr_expect(self, pattern: str, timeout: float = 10.0) -> str:
        match = self.stderr.expect(pattern, timeout)
        if match is None:
            pytest.fail(f"kubectl {' '.join(self._args)}: nothing matching {pattern!r} on stderr within {timeout}s")
        return match.string

    def wait(self, timeout: float) -> Ran:
        """Its output once it exits by itself; fails the test if it is still running after `timeout`."""
        try:
            code = self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            ran = self.stop()
            pytest.fail(f"kubectl {' '.join(self._args)} still running after {timeout}s; stdout:\n{ran.out}")
        return Ran(code, self.stdout.rest(), self.stderr.rest())

    def stop(self) -> Ran:
        if self._proc.poll() is None:
            self._proc.terminate()
        try:
            code = self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        return Ran(code, self.stdout.rest(), self.stderr.rest())


class Kubectl:
    """Runs the kubectl dispatcher (the version matching the server) or a pinned kubectl.1.NN against Capstan."""

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        directory = _kubectl_dir()
        if directory is None:
            pytest.skip("kubectl is not on PATH")
        self._dir = directory
        self._base = [f"--kubeconfig={kubeconfig}", f"--cache-dir={cache_dir}"]

    def binary(self, version: str | None) -> str:
        if version is None:
            return "kubectl"
        pinned = self._dir / f"kubectl.{version}"
        if not pinned.exists():
            pytest.skip(f"{pinned} is not installed")
        return str(pinned)

    def __call__(self, *args: str, version: str | None = None, input: str | None = None,
                 timeout: float = KUBECTL_TIMEOUT, env: dict[str, str] | None = None) -> Ran:
        """Run kubectl with `input` as its stdin (none by default); fail the test if it outlives `timeout`."""
        cmd = [self.binary(version), *self._base, *args]
        try:
            done = subprocess.run(cmd, input=input, stdin=subprocess.DEVNULL if input is None else None,
                                  capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
        except subprocess.TimeoutExpired as err:
            pytest.fail(f"`kubectl {' '.join(args)}` did not finish within {timeout}s "
                        f"(stdout {_text(err.stdout)!r}, stderr {_text(err.stderr)!r})")
        return Ran(done.returncode, done.stdout, done.stderr)

    def json(self, *args: str, **kwargs: Any) -> Obj:
        """The JSON kubectl prints for `args` (which ask for `-o json`); fails the test unless it exits 0."""
        ran = self(*args, **kwargs)
        assert ran.code == 0, f"kubectl {' '.join(args)}: exit {ran.code}\n{ran.err}"
        printed: Obj = json.loads(ran.out)
        return printed

    def start(self, *args: str, version: str | None = None) -> Background:
        proc = subprocess.Popen([self.binary(version), *self._base, *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return Background(proc, args)


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def editor(directory: Path, script: str) -> dict[str, str]:
    """The environment that makes `kubectl edit` run `script` (sh, the file to edit is "$1") as its editor."""
    path = directory / "editor.sh"
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)
    return {"KUBE_EDITOR": str(path)}


@pytest.fixture(scope="session")
def kubectl(capstan: Capstan, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    # A private discovery cache: nothing read from ~/.kube, nothing left in it.
    return Kubectl(capstan.kubeconfig, tmp_path_factory.mktemp("kube-cache"))


# -- the official Python client ------------------------------------------------------------------

REQUEST_TIMEOUT = 15.0  # seconds, for every request the client makes (a watch: between two reads)


def bounded(api_client: client.ApiClient, seconds: float = REQUEST_TIMEOUT) -> client.ApiClient:
    """Give every request of `api_client` a timeout unless it sets its own (the client's default is none)."""
    rest = api_client.rest_client
    request: Any = rest.request

    def with_timeout(*args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        return request(*args, _request_timeout=_request_timeout or seconds, **kwargs)

    setattr(rest, "request", with_timeout)  # noqa: B010 (mypy refuses assigning to a method)
    return api_client


@pytest.fixture(scope="module")
def api(capstan: Capstan) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(capstan.kubeconfig))  # type: ignore[no-untyped-call]
    yield bounded(api_client)
    api_client.close()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)
