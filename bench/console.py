"""The web console on many objects: how long until 10,000 ConfigMaps are all in the console's table, how many
rows the page keeps in its DOM meanwhile, how long a scroll to the bottom takes to draw, and how long a created
object takes to show as a new row; beside the anchor of the same paged Table LIST fetched by a plain client.

`capstan serve --insecure` in its own process (the console needs no login there), the objects created by this
process, and a headless Chromium (Debian's package, tests/gateway/chromium.py's driver) opened on
/console/#/r/core/v1/configmaps. Figures are read in the page (performance.now) where the browser does the work.

    python -m bench.console                  # 10,000 ConfigMaps
    python -m bench.console --quick          # 500

One JSON line per figure (bench/_util.py's shape). Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from bench._processes import Children
from bench._util import CEILING, at_most, emit, note, run_workers
from tests.gateway.chromium import Browser, executable

PATH = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
DATA = {f"key-{i}": f"{i:02}" * 24 for i in range(4)}
SERVE = re.compile(r"capstan serving: HTTP (http://\S+)")
DOM_ROWS = 80  # the virtualised table's rows in the DOM: the view (~25) and 10 above and below


async def create(url: str, count: int) -> None:
    async with aiohttp.ClientSession(url) as session:
        async def one(i: int) -> None:
            body = {"metadata": {"name": f"cm-{i:05}", "labels": {"bench": "console"}}, "data": DATA}
            async with session.post(PATH, json=body) as resp:
                assert resp.status == 201, await resp.text()

        await run_workers(count, 16, one)


async def paged_table(url: str) -> tuple[float, int]:
    """Seconds a plain client takes to fetch the Table in the console's pages (limit 500), and the rows."""
    rows = 0
    started = time.perf_counter()
    async with aiohttp.ClientSession(url) as session:
        token = ""
        while True:
            query = f"?limit=500&continue={token}" if token else "?limit=500"
            async with session.get(PATH + query, headers={"Accept": TABLE}) as resp:
                doc = await resp.json()
            rows += len(doc["rows"])
            token = doc["metadata"].get("continue", "")
            if not token:
                return time.perf_counter() - started, rows


async def run(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="capstan-console-bench-"))
    children = Children(root)
    browser = None
    try:
        serve = children.start("serve", "-m", "capstan", "serve", "--workers", "1",
                               "--insecure", "--data-dir", str(root / "data"),
                               "--http-port", "0", "--grpc-port", "0", "--sync", "false")
        url = serve.listening(SERVE)
        note(f"creating {args.objects} ConfigMaps")
        await create(url, args.objects)
        fetched, expected = await paged_table(url)
        emit("paged-table-list", "client", "seconds", fetched, CEILING, objects=expected)
        browser = Browser.start(root / "profile", root / "screenshots")
        async with browser.page() as page:
            await page.goto(url + "/console/")
            await page.eval("sessionStorage.setItem('capstan.console.namespace', 'default')")
            await page.goto(url + "/console/")
            await page.wait("document.querySelectorAll('#resources a').length", timeout=30)
            started = time.perf_counter()
            await page.goto(url + "/console/#/r/core/v1/configmaps")
            await page.wait("!!document.querySelector('.vrow')", timeout=60)
            first = time.perf_counter() - started
            await page.wait(f"(document.querySelector('main .status') || {{}}).textContent"
                            f"?.startsWith('{expected} of {expected}')", timeout=120)
            whole = time.perf_counter() - started
            dom = await page.eval("document.querySelectorAll('.vrow').length")
            emit("console-first-rows", "chromium", "seconds", first, at_most(1.0, "s"), objects=expected)
            emit("console-all-rows", "chromium", "seconds", whole, at_most(2.0 * fetched + 1.0, "s"), objects=expected,
                 anchor_seconds=round(fetched, 3))
            emit("console-dom-rows", "chromium", "rows", dom, at_most(DOM_ROWS, "rows"), objects=expected)
            scroll = await page.eval(
                "new Promise(done => { const body = document.querySelector('.vbody'); const t0 = performance.now();"
                " body.scrollTop = body.scrollHeight; requestAnimationFrame(() => requestAnimationFrame(() =>"
                " done([performance.now() - t0, document.querySelector('.vspace').lastChild.innerText]))); })")
            last_ok = f"cm-{args.objects - 1:05}" in scroll[1]
            emit("console-scroll-bottom", "chromium", "ms", scroll[0], at_most(100.0, "ms"), correct=last_ok,
                 objects=expected)
            await page.screenshot("bottom")
            seen = asyncio.create_task(page.eval(
                "new Promise(done => { (function look() { if (document.querySelector('.vrow.new')) done(true);"
                " else requestAnimationFrame(look); })(); })"))
            started = time.perf_counter()
            async with aiohttp.ClientSession(url) as session, \
                    session.post(PATH, json={"metadata": {"name": "zz-new"}}) as resp:
                assert resp.status == 201
            await asyncio.wait_for(seen, 30)
            emit("console-watched-create", "chromium", "ms", (time.perf_counter() - started) * 1000,
                 at_most(500.0, "ms"), objects=expected + 1)
    finally:
        if browser is not None:
            browser.stop()
        children.stop()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="500 objects")
    args = parser.parse_args(argv)
    if args.quick:
        args.objects = 500
    if executable() is None:
        print("bench.console: no chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
