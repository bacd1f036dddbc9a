"""A request's routing information, parsed once and kept on the request: the limiter, the access check and the
dispatcher each need it (requestinfo.parse itself stays a pure function of method, path and query, so its answers
are also kept by those inputs across requests)."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from gateway import requestinfo

Parsed = requestinfo.RequestInfo | requestinfo.DiscoveryInfo | None

# A one-element tuple, so that a path that names nothing (None) is remembered as well.
_KEY = web.RequestKey("capstan_parsed", tuple)


# Answers of parse by (method, path, ?watch): the only inputs it reads, and clients ask the same paths again and
# again (a controller its objects, every create its collection). Bounded: emptied when full, and a path longer than
# _LONGEST is parsed each time, so a client's unique paths hold at most _REMEMBERED x _LONGEST characters.
_REMEMBERED = 4096
_LONGEST = 256
_answers: dict[tuple[str, str, bool], Parsed] = {}


def info_of(http: web.Request) -> Parsed:
    try:  # not http.get: the request's Mapping.get is Python's generic one, a frame more per asking
        kept = http[_KEY]
    except KeyError:
        kept = http[_KEY] = (_parse(http.method, http.path, http.query),)
    info: Parsed = kept[0]
    return info


def _parse(method: str, path: str, query: Mapping[str, str]) -> Parsed:
    if len(path) > _LONGEST:
        return requestinfo.parse(method, path, query)
    key = (method, path, requestinfo.watch_query(query))
    try:
        return _answers[key]
    except KeyError:
        pass
    found = requestinfo.parse(method, path, query)
    if len(_answers) >= _REMEMBERED:
        _answers.clear()
    _answers[key] = found
    return found
