"""The console's routes on the gateway: its static assets, and the exchange of a one-time login code for a token.

What is public (no credentials, no authorization), and why: GET of the page's own files (every one a file of
static/, the same bytes for everyone, as public as /version) and POST /console/login, whose 256-bit code is the
credential. Nothing else under /console/ is: POST /console/codes goes through the gateway's access check as the
non-resource URL it is (kube authorizes it with RBAC's nonResourceURLs, verb `post`), and any other path there is
authorized before its 404. The page reads the API only through the ordinary REST paths, as its user.

Every answer carries a strict Content-Security-Policy (scripts, styles and connections to this origin only, no
inline script, no framing), nosniff, no referrer, and no caching of the login exchange.

A code lives in the memory of the worker that issued it; the login may reach another worker of the same server
(`--workers N`), which then asks the others to redeem it (server/machinery/workerpeers.py), so a code still
redeems once, wherever it is presented.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
from aiohttp import web

from gateway.console.codes import Codes
from gateway.handlers import respond
from server.machinery.credentials import Credentials
from server.machinery.workerpeers import Peers

PREFIX = "/console"
LOGIN = f"{PREFIX}/login"
CODES_PATH = f"{PREFIX}/codes"
STATIC = Path(__file__).parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
CODES_KEY = web.AppKey("console_codes", Codes)
PEERS_KEY = web.AppKey("console_peers", Peers)
CODE_KIND = "console-code"  # the question the other workers answer by redeeming a code they issued
MAX_CODE = 256  # characters: a code is 43; anything longer is not asked of the other workers


def _assets() -> dict[str, tuple[bytes, str]]:
    """Every file of static/ by its name under /console/ (index.html also as the directory itself)."""
    found: dict[str, tuple[bytes, str]] = {}
    for path in sorted(STATIC.iterdir()):
        if path.is_file():
            kind = _TYPES.get(path.suffix, "application/octet-stream")
            found[path.name] = (path.read_bytes(), f"{kind}; charset=utf-8" if kind.startswith("text/") else kind)
    found[""] = found["index.html"]
    return found


ASSETS = _assets()


def public(method: str, path: str) -> bool:
    """Whether the request is one the console serves without credentials (this module's docstring says which)."""
    if method in ("GET", "HEAD"):
        return path == PREFIX or (path.startswith(PREFIX + "/") and path[len(PREFIX) + 1:] in ASSETS)
    return method == "POST" and path == LOGIN


def _headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**SECURITY_HEADERS, "Cache-Control": "no-cache", **(extra or {})}


async def _redirect(_: web.Request) -> web.StreamResponse:
    return web.Response(status=301, headers=_headers({"Location": PREFIX + "/"}))


async def _asset(http: web.Request) -> web.StreamResponse:
    found = ASSETS.get(http.match_info["name"])
    if found is None:
        return respond.go_not_found()
    body, content_type = found
    return web.Response(body=body, headers=_headers({"Content-Type": content_type}))


def _json(code: int, document: object) -> web.Response:
    return web.Response(status=code, body=orjson.dumps(document),
                        headers=_headers({"Content-Type": "application/json", "Cache-Control": "no-store"}))


def _refusal(code: int, reason: str, message: str) -> web.Response:
    return _json(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": message, "reason": reason, "code": code})


async def _body(http: web.Request) -> dict[str, object] | None:
    """A JSON object body, or None: only application/json is read, so no HTML form can post here."""
    if http.content_type != "application/json":
        return None
    try:
        document = orjson.loads(await http.read())
    except orjson.JSONDecodeError:
        return None
    return document if isinstance(document, dict) else None


def codes_handler(credentials_key: web.RequestKey[Credentials]
                  ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def register(http: web.Request) -> web.StreamResponse:
        """A code for the caller's own bearer token; the access check before it decided the caller may."""
        token = http[credentials_key].token
        if not token:
            return _refusal(400, "BadRequest", "a login code stands for the bearer token of the request that asks "
                                               "for it: send one in the Authorization header")
        codes = http.app[CODES_KEY]
        return _json(201, {"code": codes.issue(token), "expiresInSeconds": int(codes.ttl)})

    return register


async def _login(http: web.Request) -> web.StreamResponse:
    body = await _body(http)
    code = body.get("code") if body is not None else None
    if not isinstance(code, str) or not code:
        return _refusal(400, "BadRequest", 'send {"code": "..."} as application/json')
    token = http.app[CODES_KEY].redeem(code)
    peers = http.app.get(PEERS_KEY)
    if token is None and peers is not None and len(code) <= MAX_CODE:
        token = next((answer.decode() for answer in await peers.ask(CODE_KIND, code.encode())), None)
    if token is None:
        return _refusal(401, "Unauthorized", "the login code is unknown, already used or expired")
    return _json(200, {"token": token})


def add_routes(app: web.Application, credentials_key: web.RequestKey[Credentials],
               codes: Codes | None = None, peers: Peers | None = None) -> None:
    """`peers`: the other workers of this server, which redeem the codes they issued for this one."""
    app[CODES_KEY] = codes = codes or Codes()
    if peers is not None:
        app[PEERS_KEY] = peers

        async def redeem(argument: bytes) -> bytes:
            token = codes.redeem(argument.decode(errors="replace"))
            return token.encode() if token is not None else b""

        peers.provide(CODE_KIND, redeem)
    app.router.add_get(PREFIX, _redirect)
    app.router.add_get(PREFIX + "/{name:[A-Za-z0-9._-]*}", _asset)
    app.router.add_post(LOGIN, _login)
    app.router.add_post(CODES_PATH, codes_handler(credentials_key))
