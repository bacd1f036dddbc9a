"""A request's routing information, parsed once and kept on the request: the limiter, the access check and the
dispatcher each need it (requestinfo.parse itself stays a pure function of method, path and query)."""

from __future__ import annotations

from aiohttp import web

from gateway import requestinfo

Parsed = requestinfo.RequestInfo | requestinfo.DiscoveryInfo | None

# A one-element tuple, so that a path that names nothing (None) is remembered as well.
_KEY = web.RequestKey("capstan_parsed", tuple)


def info_of(http: web.Request) -> Parsed:
    try:  # not http.get: the request's Mapping.get is Python's generic one, a frame more per asking
        kept = http[_KEY]
    except KeyError:
        kept = http[_KEY] = (requestinfo.parse(http.method, http.path, http.query),)
    info: Parsed = kept[0]
    return info
