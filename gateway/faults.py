"""Fault injection, so that tests can drive a client's retry, back-off and re-list paths against a real server:
chosen resource requests are answered with kube-shaped failures (429 with Retry-After, 500, 409, 410 Expired,
503, 504 Timeout, after an optional delay) instead of being served, and open watches are ended on demand.

Off unless the HTTP front is started with `--fault-injection`; a server without it answers the admin API 404
and runs no rule. The admin API is a non-resource path, authorized by the core as every such path is (only
`nonResourceURLs: ["*"]` or `/debug/*` grant it: cluster-admin, system:masters):

  GET    /debug/capstan/faults               {"rules": [rule, ...]}, each with its id and `hits`
  POST   /debug/capstan/faults               a rule (below); 201 with the rule as stored
  DELETE /debug/capstan/faults[/ID]          every rule, or one; 200
  POST   /debug/capstan/faults/drop-watches  a match (the rule's match fields); ends every open watch it matches
                                             as the server ends a watch at its timeout; {"dropped": N}

A rule: `verb`, `group`, `resource`, `subresource`, `namespace`, `name` match a request (absent or "" or "*":
any); `code` (required) is the answer; `count` how many matching requests it answers (default 1; 0: every one
until removed); `retryAfterSeconds` (429 and 503; default 1); `delaySeconds` before answering (a client's own
timeout can fire first); `message` replaces kube's. The first rule (in the order added) that matches and has
answers left answers; the request never reaches the core, so the audit log does not see it. A watch matched with
410 is answered as kube answers a too-old resourceVersion: 200, one ERROR event carrying the Status, the end.

Rules live in this gateway process (server/machinery/faults.py): a split deployment's gateways each have their
own; in `capstan serve` the same rules answer the gRPC API's calls too (the watches it drops are the HTTP ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from server.machinery.faults import FaultError, Faults, Match, Rule

PREFIX = "/debug/capstan/faults"
DROP_WATCHES = f"{PREFIX}/drop-watches"

FAULTS_KEY = web.AppKey("faults", Faults)


def add_routes(app: web.Application, faults: Faults) -> None:
    app[FAULTS_KEY] = faults

    async def rules(http: web.Request) -> web.StreamResponse:
        if not faults.enabled:
            return _off()
        if http.method == "GET":
            return _json(200, {"rules": faults.listed()})
        if http.method == "DELETE":
            rule_id = http.match_info.get("id")
            removed = faults.remove(rule_id)
            if rule_id is not None and not removed:
                return _json(404, {"message": f"no fault rule {rule_id}"})
            return _json(200, {"removed": removed})
        if http.method == "POST" and "id" not in http.match_info:
            try:
                rule = faults.add(Rule.of(await _body(http)))
            except FaultError as err:
                return _json(400, {"message": str(err)})
            return _json(201, rule.as_dict(0))
        return _json(405, {"message": f"{http.method} is not allowed here"})

    async def drop_watches(http: web.Request) -> web.StreamResponse:
        if not faults.enabled:
            return _off()
        if http.method != "POST":
            return _json(405, {"message": "POST a match"})
        try:
            match = Match.of(await _body(http))
        except FaultError as err:
            return _json(400, {"message": str(err)})
        return _json(200, {"dropped": faults.drop(match)})

    app.router.add_route("*", DROP_WATCHES, drop_watches)
    app.router.add_route("*", PREFIX, rules)
    app.router.add_route("*", PREFIX + "/{id}", rules)


async def _body(http: web.Request) -> Mapping[str, Any]:
    try:
        body = orjson.loads(await http.read() or b"{}")
    except orjson.JSONDecodeError as err:
        raise FaultError(f"the body is not JSON: {err}") from None
    if not isinstance(body, dict):
        raise FaultError("the body is not a JSON object")
    return body


def _off() -> web.Response:
    return _json(404, {"message": "fault injection is off: start the server with --fault-injection"})


def _json(code: int, body: Mapping[str, Any]) -> web.Response:
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")
