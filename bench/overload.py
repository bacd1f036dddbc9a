"""Overload: what 500 and 2,000 concurrent clients see from `capstan serve --insecure` on loopback, with
the default limits (64 read-only / 32 mutating in flight, fair queuing, parked connections), with max-in-flight only
(`--enable-priority-and-fairness=false`: refused at once) and with no limits (both 0), side by side.

Each client loops for DURATION seconds: nine GETs of a small ConfigMap for one merge PATCH, each as soon as
the last answered; a 429 is honoured as client-go honours it (wait Retry-After, then go on). A separate
process asks /readyz every 50 ms meanwhile, so its latency is the server's, not this crowded client's.
Printed per run (one JSON line): requests served, 429s, p50/p99 latency of the answered requests and of
/readyz.

    python -m bench.overload [--duration 5] [--clients 500,2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp

from bench._processes import Children

MODES = {
    "limits": (),
    "max-inflight-only": ("--enable-priority-and-fairness", "false"),
    "no-limits": ("--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"),
}
LISTENING = re.compile(r"capstan serving: HTTP (http://\S+)")
OBJECTS = 10
CM = "/api/v1/namespaces/default/configmaps"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def load(url: str, clients: int, duration: float) -> dict[str, float]:
    latencies: list[float] = []
    codes: dict[int, int] = {}
    deadline = time.monotonic() + duration
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        async def client(index: int) -> None:
            turn = index
            while time.monotonic() < deadline:
                turn += 1
                name = f"bench-{turn % OBJECTS}"
                started = time.monotonic()
                try:
                    if turn % 10:
                        request = session.get(f"{url}{CM}/{name}")
                    else:
                        request = session.patch(f"{url}{CM}/{name}", data=b'{"data":{"n":"%d"}}' % turn,
                                                headers={"Content-Type": "application/merge-patch+json"})
                    async with request as resp:
                        await resp.read()
                        code, retry = resp.status, float(resp.headers.get("Retry-After", "1"))
                except (TimeoutError, aiohttp.ClientError):
                    code, retry = 0, 1.0
                codes[code] = codes.get(code, 0) + 1
                if code == 429 or code == 0:
                    await asyncio.sleep(retry)
                else:
                    latencies.append(time.monotonic() - started)

        await asyncio.gather(*(client(i) for i in range(clients)))
    return {"served": len(latencies), "refused_429": codes.get(429, 0), "errors": codes.get(0, 0),
            "other_codes": sum(n for c, n in codes.items() if c not in (0, 200, 429)),
            "p50_ms": percentile(latencies, 0.5) * 1e3, "p99_ms": percentile(latencies, 0.99) * 1e3}


def probe(url: str, duration: float) -> None:
    """The --probe process: /readyz every 50 ms; prints the latencies (ms) as one JSON list."""
    out: list[float] = []
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=60) as resp:
                resp.read()
            out.append((time.monotonic() - started) * 1e3)
        except OSError:
            out.append(60_000.0)
        time.sleep(0.05)
    print(json.dumps(out))


async def prepare(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for i in range(OBJECTS):
            async with session.post(url + CM, json={"metadata": {"name": f"bench-{i}"}, "data": {"n": "0"}}) as resp:
                assert resp.status in (201, 409), await resp.text()


def run(duration: float, clients: list[int]) -> None:
    root = Path(tempfile.mkdtemp(prefix="capstan-bench-overload-"))
    try:
        for mode, flags in MODES.items():
            children = Children(root)
            try:
                server = children.start(mode, "-m", "capstan", "serve", "--workers", "1",
                                        "--insecure", "--data-dir", str(root / mode),
                                        "--http-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1", *flags)
                url = server.listening(LISTENING)
                asyncio.run(prepare(url))
                for count in clients:
                    prober = children.start("probe", "-m", "bench.overload", "--probe", url, "--duration",
                                            str(duration), control=True)
                    figures = asyncio.run(load(url, count, duration))
                    out, _ = prober.proc.communicate(timeout=duration + 120)
                    readyz = json.loads(out or b"[]")
                    figures |= {"readyz_p50_ms": percentile(readyz, 0.5), "readyz_p99_ms": percentile(readyz, 0.99),
                                "readyz_max_ms": max(readyz, default=0.0)}
                    line = {"mode": mode, "clients": count, "seconds": duration,
                            **{k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()}}
                    print(json.dumps(line), flush=True)
            finally:
                children.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.overload")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--clients", default="500,2000")
    parser.add_argument("--probe", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.probe, args.duration)
        return
    run(args.duration, [int(n) for n in args.clients.split(",")])


if __name__ == "__main__":
    main()
