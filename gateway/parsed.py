"""A request's routing information, parsed once and kept on the request: the limiter, the access check and the
dispatcher each need it (requestinfo.parse itself stays a pure function of method, path and query, so its answers
are also kept by those inputs across requests).

One object's path is its collection's path and a name: its answer is derived from the collection's, kept by the
collection's path, so a client reading many objects of a few collections costs no parse per object and does not
crowd the answers kept for other paths out."""

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
# By a path: a GET's answer for it when it is a plain collection (a list, not through /watch/, with no name nor
# subresource), else None. Bounded as _answers is.
_collections: dict[str, requestinfo.RequestInfo | None] = {}


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
    cut = path.rfind("/")
    if 0 <= cut < len(path) - 1:  # a last segment: a name, when what comes before it is a plain collection
        try:
            collection = _collections[path[:cut]]
        except KeyError:
            collection = _remember_collection(path[:cut])
        if collection is not None:
            return _named(method, collection, path[cut + 1:])
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


def _named(method: str, collection: requestinfo.RequestInfo, name: str) -> requestinfo.RequestInfo | None:
    """parse's answer for `name` in `collection`: one object's path names no subresource and ?watch does not
    make a watch of it (only the /watch/ form would, and such a collection is not plain)."""
    verb = requestinfo.named_verb(method)
    if verb is None:
        return None
    return requestinfo.RequestInfo(verb, collection.group, collection.version, collection.resource,
                                   collection.namespace, name)


def _remember_collection(path: str) -> requestinfo.RequestInfo | None:
    found = requestinfo.parse("GET", path, {})
    plain = (found if isinstance(found, requestinfo.RequestInfo) and found.verb == "list" and not found.name
             and not found.subresource and not found.subpath else None)
    if len(_collections) >= _REMEMBERED:
        _collections.clear()
    _collections[path] = plain
    return plain
