"""The aiohttp application and the kube-apiserver health endpoints.

`/healthz`, `/livez` and `/readyz` answer `ok` as kube-apiserver's do, so probes
and `kubectl get --raw /readyz` work from the first release.
"""

from __future__ import annotations

import socket

from aiohttp import web


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok", content_type="text/plain")


def build_app() -> web.Application:
    app = web.Application(client_max_size=3 * 1024 * 1024)
    for path in ("/healthz", "/livez", "/readyz"):
        app.router.add_get(path, _ok)
    return app


async def start_http(app: web.Application, listen: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `app` on listen:port (0 picks a free port); returns the runner and the bound port."""
    sock = socket.create_server((listen, port), family=_family(listen), reuse_port=False)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    bound: int = sock.getsockname()[1]
    return runner, bound


def _family(listen: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in listen else socket.AF_INET
