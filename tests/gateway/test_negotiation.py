"""Accept and Content-Type negotiation against kube-apiserver's answers.

Each expectation is what kube-apiserver does (k8s.io/apiserver handlers/negotiation, the
RequestScope's endpoint restrictions, aggregated discovery's wrapper), except the rows marked
"RFC", where Capstan is deliberately stricter or kinder (see gateway.negotiation's docstring).
"""

from __future__ import annotations

import pytest

from gateway.negotiation import (
    JSON,
    MEDIA_TYPES,
    PROTOBUF,
    STREAM_MEDIA_TYPES,
    YAML,
    CodecName,
    Conversion,
    MediaRange,
    NotAcceptable,
    PatchType,
    UnsupportedMediaType,
    negotiate_discovery,
    negotiate_input,
    negotiate_output,
    parse_accept,
    wants_pretty,
)

TABLE_V1 = Conversion("meta.k8s.io", "v1", "Table")
TABLE_V1BETA1 = Conversion("meta.k8s.io", "v1beta1", "Table")
POM_V1 = Conversion("meta.k8s.io", "v1", "PartialObjectMetadata")
POML_V1 = Conversion("meta.k8s.io", "v1", "PartialObjectMetadataList")
POML_V1BETA1 = Conversion("meta.k8s.io", "v1beta1", "PartialObjectMetadataList")
DISCOVERY_V2 = Conversion("apidiscovery.k8s.io", "v2", "APIGroupDiscoveryList")
DISCOVERY_V2BETA1 = Conversion("apidiscovery.k8s.io", "v2beta1", "APIGroupDiscoveryList")

NOT_ACCEPTABLE = (
    "only the following media types are accepted: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)
NOT_STREAMABLE = (
    "only the following media types are accepted: "
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
)
UNKNOWN_BODY = "the body of the request was in an unknown format - accepted media types include: "

# What kubectl and client-go send.
KUBECTL_GET = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
CLIENT_GO_PROTOBUF = "application/vnd.kubernetes.protobuf,application/json"
KUBECTL_DISCOVERY = (
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)

# (Accept, kind has a protobuf schema, expected media type, expected conversion)
# fmt: off
OUTPUT_CASES: list[tuple[str | None, bool, str, Conversion | None]] = [
    # defaults and wildcards: the server's first type
    (None, True, JSON, None),
    ("", True, JSON, None),
    ("*/*", True, JSON, None),
    ("*", True, JSON, None),
    ("application/*", True, JSON, None),
    ("application/json, */*", True, JSON, None),
    # plain choices
    ("application/json", True, JSON, None),
    ("application/yaml", True, YAML, None),
    ("application/vnd.kubernetes.protobuf", True, PROTOBUF, None),
    (CLIENT_GO_PROTOBUF, True, PROTOBUF, None),
    ("application/vnd.kubernetes.protobuf, application/json", True, PROTOBUF, None),
    # kinds without a schema (custom resources) fall back to JSON
    (CLIENT_GO_PROTOBUF, False, JSON, None),
    ("application/vnd.kubernetes.protobuf;q=1, */*;q=0.5", False, JSON, None),
    ("text/html, application/yaml", True, YAML, None),
    ("application, application/yaml", True, YAML, None),  # malformed clause dropped
    ("application/BOGUS, application/json", True, JSON, None),
    # order: q, then specificity, then header order
    ("application/json;q=0.5, application/yaml", True, YAML, None),
    ("application/yaml;q=0.9, application/json;q=0.95", True, JSON, None),
    ("application/yaml, application/json", True, YAML, None),
    ("*/*, application/yaml", True, YAML, None),
    ("application/*, application/yaml", True, YAML, None),
    ("*/*;q=0.8, application/yaml;q=0.5", True, JSON, None),
    ("application/*;q=0.9, application/yaml;q=0.5", True, JSON, None),  # RFC: goautoneg would pick YAML
    ("application/json;q=abc, application/yaml;q=0.1", True, YAML, None),  # an unreadable q is 0
    # q=0 refuses a type (RFC; goautoneg keeps it as least preferred)
    ("application/json;q=0, */*", True, YAML, None),
    ("*/*;q=0, application/yaml", True, YAML, None),
    ("application/vnd.kubernetes.protobuf;q=0, application/*", True, JSON, None),
    # case-insensitive names (RFC), parameters ignored or honoured
    ("APPLICATION/JSON", True, JSON, None),
    ("Application/YAML; Q=1", True, YAML, None),
    ("application/json; charset=utf-8", True, JSON, None),
    ("  application/yaml ;  q=0.5  ", True, YAML, None),
    ("application/json;stream=watch", True, JSON, None),
    ("application/yaml;stream=watch, application/json", True, JSON, None),  # YAML cannot stream
    ("application/json;stream=other, application/yaml", True, YAML, None),
    ("application/json;sv=v1", True, JSON, None),
    ("application/json;sv=v2, application/yaml", True, YAML, None),
    # Table: meta.k8s.io v1 or v1beta1, JSON or YAML only
    ("application/json;as=Table;v=v1;g=meta.k8s.io", True, JSON, TABLE_V1),
    ("application/json;as=Table;g=meta.k8s.io;v=v1", False, JSON, TABLE_V1),
    ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", True, JSON, TABLE_V1BETA1),
    (KUBECTL_GET, True, JSON, TABLE_V1),
    (KUBECTL_GET, False, JSON, TABLE_V1),
    ("application/yaml;as=Table;v=v1;g=meta.k8s.io", True, YAML, TABLE_V1),
    ("*/*;as=Table;g=meta.k8s.io;v=v1", True, JSON, TABLE_V1),
    ('application/json;as="Table";g="meta.k8s.io";v=v1', True, JSON, TABLE_V1),  # RFC: quoted values
    ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json", True, JSON, None),
    ("application/json;as=Table;v=v2;g=meta.k8s.io, application/json", True, JSON, None),
    ("application/json;as=Table;v=v1;g=example.com, application/yaml", True, YAML, None),
    ("application/json;as=table;v=v1;g=meta.k8s.io, application/yaml", True, YAML, None),  # kinds are case-sensitive
    ("application/json;as=BOGUS;v=v1beta1;g=meta.k8s.io, application/json", True, JSON, None),
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json", True, JSON, None),
    # PartialObjectMetadata(List): any type, protobuf even without a schema
    ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", True, JSON, POM_V1),
    ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", True, PROTOBUF, POM_V1),
    ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", False, PROTOBUF, POM_V1),
    ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", True, JSON, POML_V1),
    ("application/yaml;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io", False, YAML, POML_V1BETA1),
]
# fmt: on


@pytest.mark.parametrize(("accept", "protobuf", "media_type", "conversion"), OUTPUT_CASES)
def test_negotiate_output(accept: str | None, protobuf: bool, media_type: str, conversion: Conversion | None) -> None:
    output = negotiate_output(accept, protobuf=protobuf)
    assert (output.media_type, output.conversion) == (media_type, conversion)
    # Converted or not, the answer carries the bare media type (listGVKInContentType=false).
    assert output.content_type == media_type
    assert output.codec == {JSON: CodecName.JSON, YAML: CodecName.YAML, PROTOBUF: CodecName.PROTOBUF}[media_type]
    assert not output.stream


@pytest.mark.parametrize(
    ("accept", "protobuf"),
    [
        ("text/plain", True),
        ("text/*", True),
        ("application/vnd.kubernetes.protobuf", False),  # the list still names protobuf, as upstream's does
        ("application/json;q=0", True),
        ("application/json;as=Table", True),  # a conversion without group and version
        ("application/json;g=meta.k8s.io;v=v1", True),  # without a kind
        ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", True),
        ("application/cbor", True),  # Capstan does not serve CBOR (kube-apiserver's is off by default)
        ("application/json;stream=watch2", True),
    ],
)
def test_negotiate_output_not_acceptable(accept: str, protobuf: bool) -> None:
    with pytest.raises(NotAcceptable) as caught:
        negotiate_output(accept, protobuf=protobuf)
    assert caught.value.message == str(caught.value) == NOT_ACCEPTABLE
    assert (caught.value.code, caught.value.reason) == (406, "NotAcceptable")
    assert caught.value.accepted == MEDIA_TYPES


# (Accept, protobuf schema, expected media type, expected Content-Type, expected conversion) for watches
# fmt: off
STREAM_CASES: list[tuple[str | None, bool, str, str, Conversion | None]] = [
    (None, True, JSON, "application/json", None),
    ("application/json", True, JSON, "application/json", None),
    ("application/json;stream=watch", True, JSON, "application/json", None),
    ("application/vnd.kubernetes.protobuf", True, PROTOBUF, "application/vnd.kubernetes.protobuf;stream=watch", None),
    (CLIENT_GO_PROTOBUF, True, PROTOBUF, "application/vnd.kubernetes.protobuf;stream=watch", None),
    (CLIENT_GO_PROTOBUF, False, JSON, "application/json", None),
    ("application/json;as=Table;g=meta.k8s.io;v=v1", True, JSON, "application/json", TABLE_V1),
    ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", False, PROTOBUF,
     "application/vnd.kubernetes.protobuf;stream=watch", POM_V1),
]
# fmt: on


@pytest.mark.parametrize(("accept", "protobuf", "media_type", "content_type", "conversion"), STREAM_CASES)
def test_negotiate_watch(
    accept: str | None, protobuf: bool, media_type: str, content_type: str, conversion: Conversion | None
) -> None:
    output = negotiate_output(accept, protobuf=protobuf, stream=True)
    assert (output.media_type, output.content_type, output.conversion, output.stream) == (
        media_type,
        content_type,
        conversion,
        True,
    )


@pytest.mark.parametrize(
    ("accept", "message"),
    [
        ("application/yaml", NOT_STREAMABLE),
        ("application/yaml, application/json", NOT_STREAMABLE),  # the pick is YAML; upstream does not fall back
        ("application/yaml;as=Table;g=meta.k8s.io;v=v1", NOT_STREAMABLE),
        ("text/plain", NOT_ACCEPTABLE),  # the ordinary negotiation comes first, with its own list
    ],
)
def test_negotiate_watch_not_acceptable(accept: str, message: str) -> None:
    with pytest.raises(NotAcceptable) as caught:
        negotiate_output(accept, protobuf=True, stream=True)
    assert caught.value.message == message


# (Accept, expected media type, expected Content-Type, expected conversion) for /api and /apis
# fmt: off
DISCOVERY_CASES: list[tuple[str | None, str, str, Conversion | None]] = [
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", JSON,
     "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", DISCOVERY_V2),
    ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", JSON,
     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", DISCOVERY_V2BETA1),
    # echoed as g, v, as whatever order the client used
    ("application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io", JSON,
     "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", DISCOVERY_V2),
    (KUBECTL_DISCOVERY, PROTOBUF,
     "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", DISCOVERY_V2),
    ("application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", YAML,
     "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", DISCOVERY_V2),
    # an aggregated clause wins over a better-placed legacy one
    ("application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", JSON,
     "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", DISCOVERY_V2),
    # otherwise the legacy documents
    (None, JSON, JSON, None),
    ("application/json", JSON, JSON, None),
    ("application/vnd.kubernetes.protobuf", PROTOBUF, PROTOBUF, None),
    ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList, application/yaml", YAML, YAML, None),
    ("application/json;as=Table;g=meta.k8s.io;v=v1, application/json", JSON, JSON, None),
]
# fmt: on


@pytest.mark.parametrize(("accept", "media_type", "content_type", "conversion"), DISCOVERY_CASES)
def test_negotiate_discovery(
    accept: str | None, media_type: str, content_type: str, conversion: Conversion | None
) -> None:
    output = negotiate_discovery(accept)
    assert (output.media_type, output.content_type, output.conversion) == (media_type, content_type, conversion)


@pytest.mark.parametrize("accept", ["text/html", "application/json;as=Table;g=meta.k8s.io;v=v1"])
def test_negotiate_discovery_not_acceptable(accept: str) -> None:
    with pytest.raises(NotAcceptable, match=r"^only the following media types are accepted: application/json, "):
        negotiate_discovery(accept)


@pytest.mark.parametrize(
    ("accept", "pretty"),
    [
        ("application/json", False),
        ("application/json;pretty=1", True),
        ("application/json; pretty=1", True),
        ("unrecognized/stuff,application/json; pretty=1", True),
        ("application/json;pretty=true", False),  # only "1" counts, as upstream
        ("application/yaml;pretty=1", True),
    ],
)
def test_pretty_parameter(accept: str, pretty: bool) -> None:
    assert negotiate_output(accept, protobuf=True).pretty is pretty


@pytest.mark.parametrize(
    ("query", "user_agent", "pretty"),
    [
        (None, None, False),
        (None, "kubectl/v1.31.0 (linux/amd64) kubernetes/abcdef", False),
        (None, "curl/8.5.0", True),
        (None, "Wget/1.21", True),
        (None, "Mozilla/5.0 (X11; Linux x86_64)", True),
        ("true", "kubectl/v1.31.0", True),
        ("1", None, True),
        ("T", None, True),
        ("false", "curl/8.5.0", False),  # the query decides when given
        ("yes", "curl/8.5.0", False),  # not a Go bool: false, and the user agent is not consulted
        ("", "curl/8.5.0", True),  # empty: as if absent
    ],
)
def test_wants_pretty(query: str | None, user_agent: str | None, pretty: bool) -> None:
    assert wants_pretty(query, user_agent) is pretty


def test_parse_accept_orders_by_q_then_specificity_then_header_order() -> None:
    ranges = parse_accept("*/*;q=0.5, text/*, application/yaml;q=0.5, application/json, text/html;level=1")
    assert [(r.type, r.subtype, r.q) for r in ranges] == [
        ("application", "json", 1.0),
        ("text", "html", 1.0),
        ("text", "*", 1.0),
        ("application", "yaml", 0.5),
        ("*", "*", 0.5),
    ]
    assert dict(ranges[1].params) == {"level": "1"}


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("application/json", [MediaRange("application", "json")]),
        ("*", [MediaRange("*", "*")]),
        ("a/b/c, /json, application/, ,", []),
        ("application/json;as=Table;;q=0.5;x", [MediaRange("application", "json", {"as": "Table"}, 0.5)]),
        ("application/json;a=b=c", [MediaRange("application", "json")]),  # goautoneg drops it
        ('text/plain;FORMAT="a;b"', [MediaRange("text", "plain", {"format": '"a'})]),  # no quoted ";" (goautoneg)
    ],
)
def test_parse_accept_clauses(header: str, expected: list[MediaRange]) -> None:
    parsed = parse_accept(header)
    assert [(r.type, r.subtype, dict(r.params), r.q) for r in parsed] == [
        (r.type, r.subtype, dict(r.params), r.q) for r in expected
    ]


# (Content-Type, protobuf schema, expected codec, expected media type)
INPUT_CASES: list[tuple[str | None, bool, CodecName, str]] = [
    (None, True, CodecName.JSON, JSON),  # the official Python client sends none
    ("", True, CodecName.JSON, JSON),
    (None, False, CodecName.JSON, JSON),
    ("application/json", True, CodecName.JSON, JSON),
    ("application/json; charset=utf-8", True, CodecName.JSON, JSON),
    ('application/json; charset="utf-8"', True, CodecName.JSON, JSON),
    ("application/json;", True, CodecName.JSON, JSON),  # a trailing ";" is tolerated, as Go does
    ("APPLICATION/JSON", True, CodecName.JSON, JSON),
    ("application/yaml", True, CodecName.YAML, YAML),
    ("application/yaml", False, CodecName.YAML, YAML),
    ("application/vnd.kubernetes.protobuf", True, CodecName.PROTOBUF, PROTOBUF),
]


@pytest.mark.parametrize(("content_type", "protobuf", "codec", "media_type"), INPUT_CASES)
def test_negotiate_input(content_type: str | None, protobuf: bool, codec: CodecName, media_type: str) -> None:
    parsed = negotiate_input(content_type, protobuf=protobuf)
    assert (parsed.codec, parsed.media_type, parsed.patch_type) == (codec, media_type, None)


BUILT_IN = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


@pytest.mark.parametrize(
    ("content_type", "protobuf", "accepted"),
    [
        ("text/plain", True, BUILT_IN),
        ("application/x-yaml", True, BUILT_IN),
        ("text/yaml", True, BUILT_IN),
        ("application/merge-patch+json", True, BUILT_IN),  # a patch type outside PATCH
        ("application", True, BUILT_IN),
        ("application/json; charset", True, BUILT_IN),  # Go's mime.ParseMediaType refuses the parameter
        ("application/json/x", True, BUILT_IN),
        ("application/vnd.kubernetes.protobuf", False, "application/json, application/yaml"),
        ("text/plain", False, "application/json, application/yaml"),
    ],
)
def test_negotiate_input_unsupported(content_type: str, protobuf: bool, accepted: str) -> None:
    with pytest.raises(UnsupportedMediaType) as caught:
        negotiate_input(content_type, protobuf=protobuf)
    assert caught.value.message == UNKNOWN_BODY + accepted
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")


# (Content-Type, protobuf schema, strategic merge, expected codec, expected patch type)
PATCH_CASES: list[tuple[str, bool, bool | None, CodecName, PatchType]] = [
    ("application/json-patch+json", True, None, CodecName.JSON, PatchType.JSON_PATCH),
    ("application/merge-patch+json", False, None, CodecName.JSON, PatchType.MERGE_PATCH),
    ("application/merge-patch+json; charset=utf-8", True, None, CodecName.JSON, PatchType.MERGE_PATCH),
    ("application/strategic-merge-patch+json", True, None, CodecName.JSON, PatchType.STRATEGIC_MERGE_PATCH),
    ("application/strategic-merge-patch+json", False, True, CodecName.JSON, PatchType.STRATEGIC_MERGE_PATCH),
    ("application/apply-patch+yaml", True, None, CodecName.YAML, PatchType.APPLY_PATCH),
    ("application/apply-patch+yaml", False, None, CodecName.YAML, PatchType.APPLY_PATCH),
    ("Application/Apply-Patch+YAML", True, None, CodecName.YAML, PatchType.APPLY_PATCH),
]


@pytest.mark.parametrize(("content_type", "protobuf", "strategic", "codec", "patch_type"), PATCH_CASES)
def test_negotiate_patch(
    content_type: str, protobuf: bool, strategic: bool | None, codec: CodecName, patch_type: PatchType
) -> None:
    parsed = negotiate_input(content_type, protobuf=protobuf, patch=True, strategic_merge=strategic)
    assert (parsed.codec, parsed.media_type, parsed.patch_type) == (codec, patch_type.value, patch_type)


ALL_PATCHES = (
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml"
)
NO_STRATEGIC = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"


@pytest.mark.parametrize(
    ("content_type", "protobuf", "strategic", "accepted"),
    [
        ("application/json", True, None, ALL_PATCHES),  # PATCH takes only patch types
        (None, True, None, ALL_PATCHES),  # and a patch needs its type named
        ("", True, None, ALL_PATCHES),
        ("application/yaml", True, None, ALL_PATCHES),
        ("application/strategic-merge-patch+json", False, None, NO_STRATEGIC),  # custom resources
        ("application/strategic-merge-patch+json", True, False, NO_STRATEGIC),
        ("application/apply-patch+json", False, None, NO_STRATEGIC),
    ],
)
def test_negotiate_patch_unsupported(
    content_type: str | None, protobuf: bool, strategic: bool | None, accepted: str
) -> None:
    with pytest.raises(UnsupportedMediaType) as caught:
        negotiate_input(content_type, protobuf=protobuf, patch=True, strategic_merge=strategic)
    assert caught.value.message == UNKNOWN_BODY + accepted


def test_lists_are_kube_apiservers() -> None:
    assert ", ".join(MEDIA_TYPES) == "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    assert NotAcceptable(STREAM_MEDIA_TYPES).message == NOT_STREAMABLE
    assert [p.value for p in PatchType] == ALL_PATCHES.split(", ")


def test_conversion_api_version() -> None:
    assert TABLE_V1.api_version == "meta.k8s.io/v1"
