"""Content negotiation: Accept and Content-Type headers in, codec, conversion and Content-Type out.

A pure function of the headers, so a handler asks one question and never parses a header (the
shape of k8s.io/apiserver/pkg/endpoints/handlers/negotiation). What it reproduces of kube-apiserver:

- The server's media types, in its order: application/json, application/yaml,
  application/vnd.kubernetes.protobuf. An empty Accept, ``*/*`` and ``application/*`` pick JSON.
- Accept clauses are tried best first (q, then specificity, then header order); for each, the
  server's types it matches are tried in server order, and the first whose parameters this
  endpoint allows wins (NegotiateMediaTypeOptions). A clause it cannot honour is skipped, never
  an error: ``application/vnd.kubernetes.protobuf, application/json`` for a kind without a
  protobuf schema answers JSON, as kube-apiserver does for custom resources.
- Parameters: ``as``/``g``/``v`` ask for a conversion (acceptMediaTypeOptions), allowed only to
  meta.k8s.io v1 or v1beta1 Table (JSON or YAML, never protobuf; RequestScope.AllowsMediaTypeTransform)
  and PartialObjectMetadata(List) (any type, even protobuf for kinds without a schema); any other
  conversion skips the clause. ``stream`` other than ``watch``, or on YAML (no stream serializer),
  skips it; so does ``sv`` other than ``v1``. ``pretty=1`` asks for indented output. Others
  (``charset``...) are ignored.
- Nothing acceptable: 406 "only the following media types are accepted: " and the server's list;
  for a watch whose pick cannot stream (YAML), the stream list instead (NegotiateOutputMediaTypeStream).
- Content-Type of the answer is the bare media type, also for Table and PartialObjectMetadata
  (transformResponseObject passes listGVKInContentType=false); a watch answers ``application/json``
  (no ``;stream=watch``) or ``application/vnd.kubernetes.protobuf;stream=watch`` (serveWatchHandler).
  Only aggregated discovery echoes its conversion, g, v and as in that order (generateMediaTypeWithGVK):
  ``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``.
- Request bodies: no Content-Type is JSON (the official Python client sends none); parameters such
  as charset are ignored; anything but the server's types is 415 "the body of the request was in an
  unknown format - accepted media types include: " and the list. PATCH takes only the patch types,
  and a missing Content-Type is 415 there.

Deliberately kinder than upstream (RFC 9110 where kube's parser is lax): media types and parameter
names are case-insensitive, a quoted parameter value is unquoted, ``q=0`` makes a type unacceptable
(kube's goautoneg keeps it as the least preferred), and ordering by q is strict (goautoneg's
comparator lets a more specific range with lower q jump ahead of a wildcard).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import ClassVar

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"

# Every object media type, in kube-apiserver's order: the order matters, a wildcard picks the first.
MEDIA_TYPES: tuple[str, ...] = (JSON, YAML, PROTOBUF)
# What a watch can stream, as kube-apiserver words it in its 406 (YAML has no stream serializer).
STREAM_MEDIA_TYPES: tuple[str, ...] = (f"{JSON};stream=watch", f"{PROTOBUF};stream=watch")

META_GROUP = "meta.k8s.io"
DISCOVERY_GROUP = "apidiscovery.k8s.io"
_META_VERSIONS = frozenset({"v1", "v1beta1"})
_DISCOVERY_VERSIONS = frozenset({"v2", "v2beta1"})
_PARTIAL_KINDS = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})


class CodecName(StrEnum):
    """Which codec module renders or reads a body."""

    JSON = "json"
    YAML = "yaml"
    PROTOBUF = "protobuf"


_CODEC_OF: Mapping[str, CodecName] = MappingProxyType(
    {JSON: CodecName.JSON, YAML: CodecName.YAML, PROTOBUF: CodecName.PROTOBUF}
)


class PatchType(StrEnum):
    """The Content-Types of PATCH, in the order kube-apiserver lists them in its 415."""

    JSON_PATCH = "application/json-patch+json"
    MERGE_PATCH = "application/merge-patch+json"
    STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
    APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class Conversion:
    """A requested change of what is returned.

    ``as=Table;g=meta.k8s.io;v=v1`` is Conversion("meta.k8s.io", "v1", "Table").
    """

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@dataclass(frozen=True)
class MediaRange:
    """One clause of an Accept header. Names are lower-cased; values keep their case (``as=Table``)."""

    type: str
    subtype: str
    params: Mapping[str, str] = field(default_factory=dict)
    q: float = 1.0

    def matches(self, media_type: str) -> bool:
        kind, _, sub = media_type.partition("/")
        return self.type == "*" or (self.type == kind and self.subtype in ("*", sub))

    @property
    def is_wildcard(self) -> bool:
        return self.type == "*" or self.subtype == "*"


@dataclass(frozen=True)
class Output:
    """How to answer: with which codec, converted to what, under which Content-Type.

    pretty is the Accept clause's own ``pretty=1``; the handler ORs it with wants_pretty().
    """

    codec: CodecName
    media_type: str
    content_type: str
    conversion: Conversion | None = None
    pretty: bool = False
    stream: bool = False


@dataclass(frozen=True)
class Input:
    """How to read a request body. A patch names its patch type; its codec is YAML for apply
    patches and JSON for the other three."""

    codec: CodecName
    media_type: str
    patch_type: PatchType | None = None


class NegotiationError(Exception):
    """A typed refusal carrying kube-apiserver's Status code, reason and exact message."""

    code: ClassVar[int]
    reason: ClassVar[str]
    _prefix: ClassVar[str]

    def __init__(self, accepted: Sequence[str]) -> None:
        self.accepted = tuple(accepted)
        self.message = self._prefix + ", ".join(self.accepted)
        super().__init__(self.message)


class NotAcceptable(NegotiationError):
    """No type in Accept can be served (406). kube-apiserver writes this Status as indented JSON
    whatever the Accept header said (WriteObjectNegotiated falls back to WriteRawJSON)."""

    code = 406
    reason = "NotAcceptable"
    _prefix = "only the following media types are accepted: "


class UnsupportedMediaType(NegotiationError):
    """The request body's Content-Type cannot be read (415)."""

    code = 415
    reason = "UnsupportedMediaType"
    _prefix = "the body of the request was in an unknown format - accepted media types include: "


def parse_accept(header: str) -> list[MediaRange]:
    """The clauses of an Accept header, best first: by q, then concrete before wildcard types and
    subtypes, then in header order. Malformed clauses are dropped, as goautoneg drops them; a bare
    ``*`` means ``*/*``. Clauses with q=0 are kept (last) for negotiate_* to honour."""
    ranges: list[MediaRange] = []
    for part in header.split(","):
        media, _, rest = part.strip(" \t").partition(";")
        media = media.strip(" \t").lower()
        if media == "*":
            media = "*/*"
        kind, slash, sub = media.partition("/")
        if not slash or not kind or not sub or "/" in sub:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for item in rest.split(";") if rest else ():
            key, eq, value = item.partition("=")
            key, value = key.strip(" \t").lower(), _unquote(value.strip(" \t"))
            if not eq or not key or "=" in value:
                continue
            if key == "q":
                q = _quality(value)
            else:
                params[key] = value
        ranges.append(MediaRange(kind, sub, MappingProxyType(params), q))
    ranges.sort(key=lambda r: (-r.q, r.type == "*", r.subtype == "*"))  # stable: ties keep header order
    return ranges


def negotiate_output(accept: str | None, *, protobuf: bool, stream: bool = False, table: bool = True) -> Output:
    """The answer's codec, conversion and Content-Type for a resource endpoint.

    protobuf: whether the kind has a protobuf schema (False for custom resources).
    stream: a watch; its Content-Type differs and YAML cannot stream.
    table: whether the resource has a Table form (kube's RequestScope has a TableConvertor; the reviews do not).
    Raises NotAcceptable with kube-apiserver's message.

    A pure function of its arguments, and clients send the same few Accept headers request after request, so
    answers are kept (bounded: an Accept is the client's to choose); a refusal is worked out each time.
    """
    return _negotiated_output(accept, protobuf, stream, table)


@functools.lru_cache(maxsize=256)
def _negotiated_output(accept: str | None, protobuf: bool, stream: bool, table: bool) -> Output:
    found = _negotiate(accept, lambda media, conversion: _resource_allows(media, conversion, protobuf, table), "v1")
    if found is None:
        raise NotAcceptable(MEDIA_TYPES)
    media, conversion, pretty = found
    content_type = media
    if stream:
        if media == YAML:
            raise NotAcceptable(STREAM_MEDIA_TYPES)
        content_type = JSON if media == JSON else f"{media};stream=watch"
    return Output(_CODEC_OF[media], media, content_type, conversion, pretty, stream)


def negotiate_status(accept: str | None, *, protobuf: bool) -> Output | None:
    """How an error answers a resource endpoint: kube-apiserver writes its Status through
    DefaultEndpointRestrictions (ErrorNegotiated), which allow no conversion and no ``sv``, so only the
    Accept's plain clauses count (``application/json`` after a metadata client's protobuf conversions);
    None when none is acceptable, and kube writes indented JSON then (WriteRawJSON)."""
    found = _negotiate(accept, lambda media, conversion: conversion is None and (protobuf or media != PROTOBUF), None)
    if found is None:
        return None
    media, _, pretty = found
    return Output(_CODEC_OF[media], media, media, None, pretty)


def negotiate_discovery(accept: str | None) -> Output:
    """Negotiation for /api and /apis, where a clause asking for aggregated discovery
    (``as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2`` or ``v2beta1``) wins if any does, and
    the answer's Content-Type echoes it; otherwise the legacy documents (APIVersions, APIGroupList),
    in any of the three types and with no conversion. As kube-apiserver's WrappedHandler and its
    legacy root handlers (DefaultEndpointRestrictions). Raises NotAcceptable."""
    found = _negotiate(accept, _discovery_allows, None)
    if found is not None:
        media, conversion, pretty = found
        assert conversion is not None  # _discovery_allows admits nothing else
        content_type = f"{media};g={conversion.group};v={conversion.version};as={conversion.kind}"
        return Output(_CODEC_OF[media], media, content_type, conversion, pretty)
    # The legacy documents take no conversion at all (DefaultEndpointRestrictions).
    found = _negotiate(accept, lambda media, conversion: conversion is None, None)
    if found is None:
        raise NotAcceptable(MEDIA_TYPES)
    media, _, pretty = found
    return Output(_CODEC_OF[media], media, media, None, pretty)


def negotiate_input(
    content_type: str | None,
    *,
    protobuf: bool,
    patch: bool = False,
    strategic_merge: bool | None = None,
) -> Input:
    """How to read a request body, or UnsupportedMediaType with kube-apiserver's message.

    protobuf: whether the kind has a protobuf schema. Without one, protobuf bodies are refused and
    the 415 lists only JSON and YAML (kube-apiserver would accept the type for a custom resource and
    then fail to decode the body with a 400).
    patch: a PATCH, which takes only the patch types. strategic_merge: whether the kind takes
    strategic merge patches; by default the same as protobuf, since Kubernetes' built-in kinds have
    both and custom resources neither (their 415 lists the other three types).
    """
    if patch:
        allowed = [
            p for p in PatchType if p is not PatchType.STRATEGIC_MERGE_PATCH or _default(strategic_merge, protobuf)
        ]
        media = (content_type or "").partition(";")[0].strip(" \t").lower()
        for patch_type in allowed:
            if media == patch_type:
                codec = CodecName.YAML if patch_type is PatchType.APPLY_PATCH else CodecName.JSON
                return Input(codec, media, patch_type)
        raise UnsupportedMediaType(allowed)
    accepted = MEDIA_TYPES if protobuf else (JSON, YAML)
    parsed = JSON if content_type is None or not content_type.strip(" \t") else _parse_content_type(content_type)
    if parsed in accepted:
        return Input(_CODEC_OF[parsed], parsed)
    raise UnsupportedMediaType(accepted)


def wants_pretty(pretty: str | None, user_agent: str | None) -> bool:
    """kube-apiserver's isPrettyPrint: ``?pretty=`` decides when given a value (a Go bool; anything
    unparsable is false); otherwise curl, Wget and browsers get indented JSON."""
    if pretty:
        return pretty in _GO_TRUE
    return (user_agent or "").startswith(("curl", "Wget", "Mozilla/5.0"))


_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool's true spellings

# An endpoint's rule: may this media type carry this conversion (None: none asked)?
_Allows = Callable[[str, "Conversion | None"], bool]


def _negotiate(
    accept: str | None, allows: _Allows, server_version: str | None
) -> tuple[str, Conversion | None, bool] | None:
    """The first (media type, conversion, pretty) the Accept header and the endpoint agree on."""
    if accept is None or not accept.strip(" \t"):
        return (JSON, None, False) if allows(JSON, None) else None
    ranges = parse_accept(accept)
    # A type named with q=0 (and no conversion) is not acceptable, even where a wildcard matches it.
    refused = {f"{r.type}/{r.subtype}" for r in ranges if r.q <= 0 and not r.is_wildcard and not _conversion(r.params)}
    for clause in ranges:
        if clause.q <= 0:
            continue
        for media in MEDIA_TYPES:
            if not clause.matches(media) or (clause.is_wildcard and media in refused):
                continue
            options = _options(clause.params, media, allows, server_version)
            if options is not None:
                return (media, *options)
    return None


def _options(
    params: Mapping[str, str], media: str, allows: _Allows, server_version: str | None
) -> tuple[Conversion | None, bool] | None:
    """acceptMediaTypeOptions: the clause's conversion and pretty flag, or None when this media type
    cannot honour the clause's parameters here."""
    stream = params.get("stream", "")
    if stream and (media == YAML or stream != "watch"):
        return None
    sv = params.get("sv", "")
    if sv and sv != server_version:
        return None
    conversion = _conversion(params)
    if not allows(media, conversion):
        return None
    return conversion, params.get("pretty") == "1"


def _conversion(params: Mapping[str, str]) -> Conversion | None:
    # Any of as, g or v asks for a conversion, even empty (kube-apiserver allocates Convert on the first).
    if not {"as", "g", "v"} & params.keys():
        return None
    return Conversion(params.get("g", ""), params.get("v", ""), params.get("as", ""))


def _resource_allows(media: str, conversion: Conversion | None, protobuf: bool, table: bool) -> bool:
    if conversion is None:
        return protobuf or media != PROTOBUF
    if conversion.group != META_GROUP or conversion.version not in _META_VERSIONS:
        return False
    if conversion.kind == "Table":
        return table and media in (JSON, YAML)
    return conversion.kind in _PARTIAL_KINDS


def _discovery_allows(media: str, conversion: Conversion | None) -> bool:
    return (
        conversion is not None
        and conversion.group == DISCOVERY_GROUP
        and conversion.version in _DISCOVERY_VERSIONS
        and conversion.kind == "APIGroupDiscoveryList"
    )


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _parse_content_type(value: str) -> str | None:
    """The lower-cased media type of a Content-Type, or None if malformed (Go's mime.ParseMediaType
    rejects it, and kube-apiserver answers 415). Parameters are checked for syntax, then ignored."""
    media, _, rest = value.partition(";")
    media = media.strip(" \t").lower()
    kind, slash, sub = media.partition("/")
    if not slash or not _TOKEN.fullmatch(kind) or not _TOKEN.fullmatch(sub):
        return None
    for item in rest.split(";") if rest.strip(" \t") else ():
        key, eq, param = item.strip(" \t").partition("=")
        if not item.strip(" \t"):
            continue  # a trailing or doubled ";" is tolerated, as Go does
        if (
            not eq
            or not _TOKEN.fullmatch(key.strip(" \t"))
            or not (_TOKEN.fullmatch(param.strip(" \t")) or _QUOTED.fullmatch(param.strip(" \t")))
        ):
            return None
    return media


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _quality(value: str) -> float:
    try:
        q = float(value)
    except ValueError:
        return 0.0  # goautoneg ignores the parse error, leaving q at zero
    return q if q == q else 0.0  # NaN is no preference at all


def _default(value: bool | None, fallback: bool) -> bool:
    return fallback if value is None else value
