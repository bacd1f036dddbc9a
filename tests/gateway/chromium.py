"""A headless Chromium (Debian's package) driven over the DevTools protocol, for the console's browser tests.

No Playwright or browser download: the system `chromium` runs with --remote-debugging-port=0 and writes its port
to DevToolsActivePort in its profile; each `Page` is a new tab opened through /json/new and driven over its
websocket (aiohttp). A page records every request URL it makes and every console error and exception (a CSP
violation is one), so tests can assert what never happened.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

START_TIMEOUT = 20.0
WAIT = 10.0  # seconds a condition may take to hold in the page


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Browser:
    process: subprocess.Popen[bytes]
    endpoint: str  # http://127.0.0.1:<port>
    screenshots: Path

    @classmethod
    def start(cls, profile: Path, screenshots: Path) -> Browser:
        binary = executable()
        assert binary is not None
        profile.mkdir(parents=True, exist_ok=True)
        screenshots.mkdir(parents=True, exist_ok=True)
        port_file = profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)  # a profile used before keeps the last run's port
        process = subprocess.Popen(
            [binary, "--headless=new", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--user-data-dir={profile}", "--ignore-certificate-errors", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage",
             "--window-size=1280,860", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.02)
        port = port_file.read_text().split()[0]
        return cls(process, f"http://127.0.0.1:{port}", screenshots)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    @asynccontextmanager
    async def page(self) -> AsyncIterator[Page]:
        async with aiohttp.ClientSession() as session:
            async with session.put(f"{self.endpoint}/json/new?about:blank") as resp:
                target = await resp.json()
            try:
                async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                    page = Page(ws, self.screenshots)
                    reader = asyncio.create_task(page.read())
                    try:
                        await page.send("Page.enable")
                        await page.send("Runtime.enable")
                        await page.send("Log.enable")
                        await page.send("Network.enable")
                        yield page
                    finally:
                        reader.cancel()
            finally:
                async with session.get(f"{self.endpoint}/json/close/{target['id']}") as resp:
                    await resp.read()


@dataclass
class Page:
    ws: aiohttp.ClientWebSocketResponse
    screenshots: Path
    urls: list[str] = field(default_factory=list)  # every request the page made
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, CSP reports
    failures: list[tuple[int, str]] = field(default_factory=list)  # the answers >= 400: status, URL
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)

    async def read(self) -> None:
        async for message in self.ws:
            doc = json.loads(message.data)
            if "id" in doc:
                future = self._waiting.pop(doc["id"], None)
                if future is not None and not future.done():
                    future.set_result(doc)
                continue
            method, params = doc.get("method"), doc.get("params", {})
            if method == "Network.requestWillBeSent":
                self.urls.append(params["request"]["url"])
            elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
                self.failures.append((params["response"]["status"], params["response"]["url"]))
            elif method == "Runtime.exceptionThrown":
                self.errors.append(json.dumps(params["exceptionDetails"])[:500])
            elif (method == "Log.entryAdded" and params["entry"]["level"] == "error"
                  and not params["entry"]["text"].startswith("Failed to load resource")):  # in `failures`
                self.errors.append(params["entry"]["text"])
            elif method == "Runtime.consoleAPICalled" and params["type"] == "error":
                self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        await self.ws.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        doc = await asyncio.wait_for(future, WAIT)
        if "error" in doc:
            raise RuntimeError(f"{method}: {doc['error']}")
        result: dict[str, Any] = doc.get("result", {})
        return result

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = await self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait(self, expression: str, timeout: float = WAIT) -> Any:
        """The expression's value once it is truthy; fails with the page's text (its <main>) when it never is."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = await self.eval(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                text = await self.eval("(document.querySelector('main') || document.body || {innerText: ''}).innerText"
                                       ".slice(0, 3000)")
                raise AssertionError(f"never true: {expression}\npage text:\n{text}\nerrors: {self.errors}")
            await asyncio.sleep(0.05)

    async def text(self, selector: str, contains: str = "") -> str:
        """The innerText of the first element matching `selector`, once there is one (and it holds `contains`)."""
        found = f"document.querySelector({json.dumps(selector)})"
        value: str = await self.wait(
            f"{found} && {found}.innerText.includes({json.dumps(contains)}) && {found}.innerText")
        return value

    async def click(self, selector: str) -> None:
        await self.wait(f"!!document.querySelector({json.dumps(selector)})")
        await self.eval(f"document.querySelector({json.dumps(selector)}).click()")

    async def fill(self, selector: str, value: str) -> None:
        """Sets an input's value as typing would, then fires input and change."""
        await self.wait(f"!!document.querySelector({json.dumps(selector)})")
        await self.eval(f"(() => {{ const el = document.querySelector({json.dumps(selector)}); "
                        f"el.value = {json.dumps(value)}; el.dispatchEvent(new Event('input', {{bubbles: true}})); "
                        f"el.dispatchEvent(new Event('change', {{bubbles: true}})); }})()")

    async def screenshot(self, name: str) -> Path:
        shot = await self.send("Page.captureScreenshot", format="png")
        path = self.screenshots / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
