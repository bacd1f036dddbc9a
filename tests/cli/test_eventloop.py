"""The event loop a serving process runs on (capstan/cli/eventloop.py): uvloop unless the environment asks for
asyncio's own, and a served request answered on each."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
import uvloop

from capstan.cli import eventloop
from tests.cli.test_secure import INSECURE, start


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
def test_a_server_on_each_loop_answers(choice: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`capstan serve` starts on the loop asked for, says which in its log, and serves: a create, then a get of
    what it created."""
    monkeypatch.setenv("CAPSTAN_EVENT_LOOP", choice)
    server = start(tmp_path / "data", "--insecure", "--workers", "1", "-v", "2", pattern=INSECURE)
    try:
        answered = subprocess.run([sys.executable, "-c", _CLIENT, str(server.ports[0])], capture_output=True,
                                  text=True, timeout=60, check=True)
        assert answered.stdout.split() == ["201", "200", "v"]
    finally:
        server.proc.terminate()
        _, rest = server.proc.communicate(timeout=30)
    assert f"event loop: {choice}" in server.said + rest
    assert server.proc.returncode == 0


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
