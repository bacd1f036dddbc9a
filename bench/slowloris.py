"""Slowloris against `capstan serve --insecure`: many connections that send half a request line
and then nothing, while a client asks /readyz on a fresh connection every 200 ms.

    python -m bench.slowloris [--connections 2000] [--seconds 10] [--read-header-timeout 5]

Prints, once the attack has run its time: how many of the half-open connections the server closed (by its
header timeout) and after how long, how many it refused at the cap, and the /readyz answers and their
latency during the attack. The attacking connections are opened as fast as the loopback accepts them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HALF_REQUEST = b"GET /api/v1/namespaces HTT"


async def _hold(port: int, closed: list[float], refused: list[int], stop: asyncio.Event) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        refused.append(1)
        return
    start = time.monotonic()
    try:
        writer.write(HALF_REQUEST)
        read = asyncio.ensure_future(reader.read(1))
        done, _ = await asyncio.wait([read, asyncio.ensure_future(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        if read in done:
            closed.append(time.monotonic() - start)
        else:
            read.cancel()
    except OSError:
        refused.append(1)
    finally:
        writer.close()


async def _readyz(port: int, stop: asyncio.Event, answers: list[tuple[int, float]]) -> None:
    request = b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    while not stop.is_set():
        start = time.monotonic()
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
            writer.write(request)
            head = await asyncio.wait_for(reader.read(64), 5)
            code = int(head.split()[1]) if head else 0
            writer.close()
        except (OSError, TimeoutError, ValueError, IndexError):
            code = 0
        answers.append((code, time.monotonic() - start))
        await asyncio.sleep(0.2)


async def attack(port: int, connections: int, seconds: float) -> dict[str, object]:
    stop = asyncio.Event()
    closed: list[float] = []
    refused: list[int] = []
    answers: list[tuple[int, float]] = []
    prober = asyncio.ensure_future(_readyz(port, stop, answers))
    holders = [asyncio.ensure_future(_hold(port, closed, refused, stop)) for _ in range(connections)]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(prober, *holders)
    ok = [latency for code, latency in answers if code == 200]
    return {
        "connections": connections, "seconds": seconds,
        "closed_by_server": len(closed),
        "closed_after_s_median": round(statistics.median(closed), 2) if closed else None,
        "refused": len(refused), "readyz_answers": len(answers), "readyz_ok": len(ok),
        "readyz_p50_ms": round(statistics.median(ok) * 1000, 1) if ok else None,
        "readyz_max_ms": round(max(ok) * 1000, 1) if ok else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--read-header-timeout", type=float, default=5.0)
    parser.add_argument("--max-connections", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        command = [sys.executable, "-m", "capstan", "serve", "--workers", "1",
                   "--insecure", "--data-dir", data, "--sync", "false",
                   "--http-port", "0", "--grpc-port", "0", "--read-header-timeout", str(args.read_header_timeout),
                   "--max-connections", str(args.max_connections)]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            endpoints = Path(data) / "endpoints.json"
            deadline = time.monotonic() + 60
            while not endpoints.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            port = int(json.loads(endpoints.read_text())["http"].rsplit(":", 1)[1])
            result = asyncio.run(attack(port, args.connections, args.seconds))
            result["read_header_timeout"] = args.read_header_timeout
            print(json.dumps(result))
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
