"""The event loop a serving process runs on (capstan/cli/eventloop.py): uvloop unless the environment asks for
asyncio's own, and a served request answered on each."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import uvloop

from capstan.cli import eventloop

ROOT = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"capstan serving: HTTP http://127\.0\.0\.1:(\d+)")


@pytest.mark.parametrize(("environ", "loop_type", "name"), [
    ({}, uvloop.Loop, "uvloop"),
    ({"CAPSTAN_EVENT_LOOP": "uvloop"}, uvloop.Loop, "uvloop"),
    ({"CAPSTAN_EVENT_LOOP": "asyncio"}, asyncio.BaseEventLoop, "asyncio"),
    ({"CAPSTAN_EVENT_LOOP": " Asyncio "}, asyncio.BaseEventLoop, "asyncio"),
    ({"CAPSTAN_EVENT_LOOP": "anything"}, uvloop.Loop, "uvloop"),
])
def test_the_loop_the_environment_asks_for(environ: dict[str, str], loop_type: type, name: str) -> None:
    async def running() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    loop = eventloop.run(running(), environ)
    assert isinstance(loop, loop_type)
    assert (name == "uvloop") == isinstance(loop, uvloop.Loop)
    assert eventloop.name(environ) == name


@pytest.mark.parametrize("choice", ["uvloop", "asyncio"])
def test_a_server_on_each_loop_answers(choice: str) -> None:
    """`capstan serve` starts on the loop asked for, says which in its log, and serves: a create, then a get of
    what it created."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        env = {**os.environ, "CAPSTAN_EVENT_LOOP": choice}
        proc = subprocess.Popen(
            [sys.executable, "-m", "capstan", "serve", "--workers", "1", "--insecure", "--http-port", "0",
             "--grpc-port", "0", "--data-dir", str(data), "-v", "2"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            port, started = _listening(proc)
            answered = subprocess.run(
                [sys.executable, "-c", _CLIENT, str(port)], capture_output=True, text=True, timeout=60, check=True)
            assert answered.stdout.split() == ["201", "200", "v"]
        finally:
            proc.terminate()
            out, _ = proc.communicate(timeout=30)
        assert f"event loop: {choice}" in started + out
        assert proc.returncode == 0


_CLIENT = """
import asyncio, sys
import aiohttp

async def main(port):
    base = f"http://127.0.0.1:{port}/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession() as session:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loop"}, "data": {"k": "v"}}
        async with session.post(base, json=body) as created:
            print(created.status)
        async with session.get(base + "/loop") as got:
            print(got.status, (await got.json())["data"]["k"])

asyncio.run(main(int(sys.argv[1])))
"""


def _listening(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """The port the server says it serves on, and what it logged until then."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        found = _LISTENING.search(line)
        if found:
            return int(found.group(1)), "".join(lines)
    raise AssertionError("the server did not say where it listens")
