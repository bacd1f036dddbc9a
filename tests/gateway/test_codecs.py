"""The codecs against the bytes kube-apiserver writes and the errors it reports.

Protobuf goldens are built by hand from field numbers (tag = number << 3 | wire type), reusing the
client-go envelope pinned in tests/protos/test_wire.py; YAML goldens are what kube-apiserver
(sigs.k8s.io/yaml over yaml.v2) prints; decode errors are kube-apiserver's words.
"""

from __future__ import annotations

import json as stdjson
import struct
from typing import Any

import orjson
import pytest

from capstan.api.meta.v1 import meta_pb2 as meta
from capstan.api.runtime import runtime_pb2 as runtime
from gateway.codecs import (
    CODECS,
    DECODE_ERRORS,
    Decoded,
    codec_for,
    protobuf,
    summarize,
    yaml,
)
from gateway.codecs import json as json_codec
from gateway.negotiation import JSON, PROTOBUF, YAML, CodecName, PatchType
from tests.protos.test_wire import CLIENT_GO_CONFIG_MAP, CLIENT_GO_ENVELOPE, MAGIC, len_field, varint

# --- protobuf envelope -----------------------------------------------------------------------


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """The envelope by hand: every field written, contentEncoding and contentType empty."""
    type_meta = len_field(1, api_version) + len_field(2, kind)
    return MAGIC + len_field(1, type_meta) + len_field(2, raw) + len_field(3, "") + len_field(4, "")


@pytest.mark.parametrize(
    ("api_version", "kind", "raw"),
    [
        ("v1", "ConfigMap", CLIENT_GO_CONFIG_MAP),
        ("apps/v1", "Deployment", b"\x0a\x00"),
        ("v1", "Status", b""),  # an empty message still writes raw: 12 00
        ("", "", b""),
        ("example.com/v1", "K" * 200, bytes(range(256)) * 3),  # multi-byte lengths
    ],
)
def test_envelope_bytes(api_version: str, kind: str, raw: bytes) -> None:
    encoded = protobuf.encode_envelope(api_version, kind, raw)
    assert encoded == envelope(api_version, kind, raw)
    unknown = runtime.Unknown(
        typeMeta=runtime.TypeMeta(apiVersion=api_version, kind=kind), raw=raw, contentEncoding="", contentType=""
    )
    assert encoded == MAGIC + unknown.SerializeToString(deterministic=True)
    assert protobuf.decode_envelope(encoded) == (api_version, kind, raw)


def test_envelope_is_client_gos() -> None:
    assert protobuf.encode_envelope("v1", "ConfigMap", CLIENT_GO_CONFIG_MAP) == CLIENT_GO_ENVELOPE
    assert protobuf.decode_envelope(CLIENT_GO_ENVELOPE) == ("v1", "ConfigMap", CLIENT_GO_CONFIG_MAP)
    assert protobuf.encode_envelope("v1", "Status", b"")[-6:] == b"\x12\x00\x1a\x00\x22\x00"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # fields in any order, unknown fields skipped, no contentEncoding/contentType
        (MAGIC + len_field(2, b"R") + len_field(1, len_field(2, "Pod") + len_field(1, "v1")), ("v1", "Pod", b"R")),
        (MAGIC + varint(5 << 3) + varint(7) + len_field(1, len_field(1, "v1")) + len_field(6, b"x"), ("v1", "", b"")),
        (MAGIC + len_field(1, len_field(1, "v1")) + len_field(1, len_field(2, "Pod")), ("v1", "Pod", b"")),  # merged
        (MAGIC + len_field(2, b"old") + len_field(2, b"new"), ("", "", b"new")),  # last wins
        (MAGIC + len_field(1, varint(3 << 3 | 5) + b"\0\0\0\0" + len_field(2, "Pod")), ("", "Pod", b"")),
        (MAGIC + len_field(3, "gzip") + len_field(4, "application/json") + len_field(2, b"R"), ("", "", b"R")),
        (MAGIC + varint(7 << 3 | 3) + varint(1 << 3 | 0) + b"\x01" + varint(7 << 3 | 4), ("", "", b"")),  # a group
    ],
)
def test_decode_envelope_tolerates_what_gogo_tolerates(body: bytes, expected: tuple[str, str, bytes]) -> None:
    assert protobuf.decode_envelope(body) == expected


# What kube-apiserver's protobuf decoder (Serializer.Decode, gogo's Unknown.Unmarshal) says.
# fmt: off
ENVELOPE_ERRORS: list[tuple[bytes, str]] = [
    (b"", "empty data"),
    (b'{"kind":"ConfigMap"}', "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
    (b"k8s", "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
    (b"k8s\x01\x0a\x00", "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
    (MAGIC, "empty body"),
    (MAGIC + b"\x0a", "unexpected EOF"),
    (MAGIC + b"\x0a\x05ab", "unexpected EOF"),
    (MAGIC + b"\x8a", "unexpected EOF"),
    (MAGIC + b"\x00", "proto: Unknown: illegal tag 0 (wire type 0)"),
    (MAGIC + b"\x02", "proto: Unknown: illegal tag 0 (wire type 2)"),
    (MAGIC + b"\x0c", "proto: Unknown: wiretype end group for non-group"),
    (MAGIC + b"\x08\x01", "proto: wrong wireType = 0 for field TypeMeta"),
    (MAGIC + b"\x10\x01", "proto: wrong wireType = 0 for field Raw"),
    (MAGIC + b"\x1d\x00\x00\x00\x00", "proto: wrong wireType = 5 for field ContentEncoding"),
    (MAGIC + b"\x21" + b"\x00" * 8, "proto: wrong wireType = 1 for field ContentType"),
    (MAGIC + b"\x0a\x02\x08\x01", "proto: wrong wireType = 0 for field APIVersion"),
    (MAGIC + b"\x0a\x02\x10\x01", "proto: wrong wireType = 0 for field Kind"),
    (MAGIC + b"\x0a\x01\x04", "proto: TypeMeta: wiretype end group for non-group"),
    (MAGIC + b"\x0a\x01\x02", "proto: TypeMeta: illegal tag 0 (wire type 2)"),
    (MAGIC + b"\x2f", "proto: illegal wireType 7"),
    (MAGIC + b"\x2c", "proto: Unknown: wiretype end group for non-group"),
    (MAGIC + b"\x2b", "unexpected EOF"),  # a group never closed
    (MAGIC + b"\x2a\x05ab", "unexpected EOF"),
    (MAGIC + b"\x29\x00", "unexpected EOF"),
    (MAGIC + b"\x0a" + b"\xff" * 10 + b"\x01", "proto: integer overflow"),
    (MAGIC + b"\x12" + varint((1 << 64) - 1), "proto: negative length found during unmarshaling"),
]
# fmt: on


@pytest.mark.parametrize(("body", "message"), ENVELOPE_ERRORS)
def test_decode_envelope_errors(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.EnvelopeError) as caught:
        protobuf.decode_envelope(body)
    assert caught.value.message == str(caught.value) == message


def test_watch_frame_bytes() -> None:
    body = len_field(1, "ADDED") + len_field(2, len_field(1, CLIENT_GO_ENVELOPE))
    frame = protobuf.encode_watch_frame("ADDED", CLIENT_GO_ENVELOPE)
    assert frame == struct.pack(">I", len(body)) + body
    event = meta.WatchEvent(type="ADDED", object=runtime.RawExtension(raw=CLIENT_GO_ENVELOPE))
    assert frame[4:] == event.SerializeToString(deterministic=True)


def test_watch_frames_round_trip() -> None:
    events = [
        ("ADDED", protobuf.encode_envelope("v1", "ConfigMap", CLIENT_GO_CONFIG_MAP)),
        ("MODIFIED", protobuf.encode_envelope("v1", "ConfigMap", b"")),
        ("BOOKMARK", protobuf.encode_envelope("v1", "ConfigMap", b"\x0a" + bytes([200]) + b"x" * 200)),
        ("ERROR", protobuf.encode_envelope("v1", "Status", b"\x12\x07Failure")),
    ]
    stream = b"".join(protobuf.encode_watch_frame(t, e) for t, e in events)
    assert list(protobuf.iter_watch_frames(stream)) == events
    assert [protobuf.decode_envelope(e)[1] for _, e in protobuf.iter_watch_frames(stream)] == [
        "ConfigMap",
        "ConfigMap",
        "ConfigMap",
        "Status",
    ]
    codec = codec_for(PROTOBUF)
    assert codec.encode_watch_event is not None
    assert codec.encode_watch_event("ADDED", CLIENT_GO_CONFIG_MAP, api_version="v1", kind="ConfigMap") == (
        protobuf.encode_watch_frame("ADDED", CLIENT_GO_ENVELOPE)
    )


@pytest.mark.parametrize("cut", [1, 3, 4, 10])
def test_truncated_watch_frame(cut: int) -> None:
    frame = protobuf.encode_watch_frame("ADDED", CLIENT_GO_ENVELOPE)
    with pytest.raises(protobuf.EnvelopeError, match="unexpected EOF"):
        list(protobuf.iter_watch_frames(frame + frame[:cut]))


# --- JSON ------------------------------------------------------------------------------------

POD_JSON = (
    b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","labels":{},"annotations":{"a":"x \\u003c y \\u0026 z",'
    b'"b":"[{\\"k\\":1},\\"\\\\\\""}},"spec":{"containers":[{"name":"c","args":[],"ports":[{"containerPort":80}]}],'
    b'"n":1e+21,"f":0.5,"t":true,"z":null},"status":{}}\n'
)


def test_json_passes_through() -> None:
    assert json_codec.encode(POD_JSON) == POD_JSON + b"\n"  # as Go's Encoder.Encode ends a document
    assert json_codec.decode(b'{"kind": "Pod"}') == b'{"kind": "Pod"}'
    assert codec_for(JSON).decode(b"{}") == Decoded(b"{}")


def test_json_pretty_is_go_marshal_indent() -> None:
    pretty = json_codec.encode(POD_JSON, pretty=True)
    # Go's MarshalIndent(v, "", "  ") lays out as Python's indent=2 does, {} and [] included ...
    expected = stdjson.dumps(stdjson.loads(POD_JSON), indent=2, ensure_ascii=False)
    assert [_indent_of(line) for line in pretty.decode().splitlines()] == [
        _indent_of(line) for line in expected.splitlines()
    ]
    assert stdjson.loads(pretty) == stdjson.loads(POD_JSON)
    # ... but escapes and number spellings stay byte for byte, and there is no trailing newline.
    assert b'"a": "x \\u003c y \\u0026 z"' in pretty
    assert b'"n": 1e+21' in pretty
    assert b'"labels": {},' in pretty and b'"args": [],' in pretty and pretty.endswith(b'"status": {}\n}')


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@pytest.mark.parametrize(
    ("compact", "pretty"),
    [
        (b"{}", b"{}"),
        (b"[]", b"[]"),
        (b'{"a":[]}', b'{\n  "a": []\n}'),
        (b'{"a":{"b":[1,2]}}', b'{\n  "a": {\n    "b": [\n      1,\n      2\n    ]\n  }\n}'),
        (b'[{"a":"{[,:]}"}]', b'[\n  {\n    "a": "{[,:]}"\n  }\n]'),
        (b' { "a" : 1 } \n', b'{\n  "a": 1\n}'),
        (b'"x"', b'"x"'),
    ],
)
def test_json_indent(compact: bytes, pretty: bytes) -> None:
    assert json_codec.indent(compact) == pretty


def test_json_watch_event_lines() -> None:
    codec = codec_for(JSON)
    assert codec.encode_watch_event is not None
    line = codec.encode_watch_event("ADDED", b'{"kind":"ConfigMap","apiVersion":"v1"}\n', api_version="", kind="")
    assert line == b'{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1"}}\n'
    stream = line + codec.encode_watch_event("DELETED", b'{"kind":"ConfigMap"}', api_version="", kind="")
    assert json_codec.decode_watch_events(stream) == [
        ("ADDED", {"kind": "ConfigMap", "apiVersion": "v1"}),
        ("DELETED", {"kind": "ConfigMap"}),
    ]


# --- YAML ------------------------------------------------------------------------------------

CONFIG_MAP = {
    "kind": "ConfigMap",
    "apiVersion": "v1",
    "metadata": {
        "name": "game-config",
        "namespace": "default",
        "uid": "b4952dc3-d670-11e5-8cd0-68f728db1985",
        "resourceVersion": "516",
        "creationTimestamp": "2016-02-18T18:52:05Z",
        "labels": {"app": "web", "app.kubernetes.io/name": "web", "tier10": "a", "tier9": "b", "enabled": "true"},
        "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {".": {}}}}],
    },
    "data": {"game.properties": "enemies=aliens\nlives=3\n", "ui.properties": "color.good=purple", "empty": ""},
}

# What kube-apiserver answers for CONFIG_MAP with Accept: application/yaml.
CONFIG_MAP_YAML = """\
apiVersion: v1
data:
  empty: ""
  game.properties: |
    enemies=aliens
    lives=3
  ui.properties: color.good=purple
kind: ConfigMap
metadata:
  creationTimestamp: "2016-02-18T18:52:05Z"
  labels:
    app: web
    app.kubernetes.io/name: web
    enabled: "true"
    tier9: b
    tier10: a
  managedFields:
  - fieldsV1:
      f:data:
        .: {}
    manager: kubectl
    operation: Update
  name: game-config
  namespace: default
  resourceVersion: "516"
  uid: b4952dc3-d670-11e5-8cd0-68f728db1985
"""


def test_yaml_is_kube_apiservers() -> None:
    assert codec_for(YAML).encode(orjson.dumps(CONFIG_MAP), api_version="", kind="") == CONFIG_MAP_YAML.encode()


# A string and how yaml.v2 prints it as a value: plain unless it would read back as something else.
# fmt: off
STRINGS: list[tuple[str, str]] = [
    ("web", "web"),
    ("", '""'),
    ("true", '"true"'), ("True", '"True"'), ("yes", '"yes"'), ("on", '"on"'), ("y", '"y"'), ("N", '"N"'),
    ("null", '"null"'), ("~", '"~"'),
    ("8080", '"8080"'), ("-1", '"-1"'), ("0x1F", '"0x1F"'), ("0o17", '"0o17"'), ("1_000", '"1_000"'),
    ("1.5", '"1.5"'), ("1e3", '"1e3"'), (".5", '".5"'), (".inf", '".inf"'), ("-.Inf", '"-.Inf"'), (".nan", '".nan"'),
    ("08", '"08"'), ("0b101", '"0b101"'), ("99999999999999999999", '"99999999999999999999"'),
    ("1:20", '"1:20"'), ("12:30:45", '"12:30:45"'),  # YAML 1.1 base 60
    ("2024-01-01", '"2024-01-01"'), ("2024-01-01T00:00:00Z", '"2024-01-01T00:00:00Z"'),
    ("2024-1-2 3:4:5.6", '"2024-1-2 3:4:5.6"'), ("2024-01-01T00:00:00.123+02:00", '"2024-01-01T00:00:00.123+02:00"'),
    ("2024-02-30", "2024-02-30"), ("2024-13-01", "2024-13-01"), ("2024-01-01T00:00:00", "2024-01-01T00:00:00"),
    ("<<", "<<"),  # a merge key is found by its text, so yaml.v2 leaves it plain
    ("1e400", "1e400"), ("0x", "0x"), ("+", "+"), ("-", "'-'"), ("=", "="), ("Norway", "Norway"),
    ("a: b", "'a: b'"), ("- x", "'- x'"), ("#c", "'#c'"), ("a #c", "'a #c'"),
    (" lead", "' lead'"), ("trail ", "'trail '"),
    ("it's", "it's"), ("'q'", "'''q'''"), ('say "hi"', 'say "hi"'), ("{x}", "'{x}'"), ("*x", "'*x'"), ("@x", "'@x'"),
    ("tab\there", '"tab\\there"'), ("ünïcödé ✓", "ünïcödé ✓"),
    ("multi\nline", "|-\n  multi\n  line"), ("multi\nline\n", "|\n  multi\n  line"), ("a\n\n", "|+\n  a\n"),
    (" lead\nx", "|2-\n   lead\n  x"), ("trailing \nspace", '"trailing \\nspace"'),
]
# fmt: on


@pytest.mark.parametrize(("value", "printed"), STRINGS)
def test_yaml_string_styles(value: str, printed: str) -> None:
    document = yaml.json_to_yaml(orjson.dumps({"k": value})).decode()
    assert document == f"k: {printed}\n"
    assert stdjson.loads(yaml.yaml_to_json(document.encode())) == {"k": value}  # and it reads back


# fmt: off
NUMBERS: list[tuple[bytes, str]] = [
    (b"0", "0"), (b"-0", "0"), (b"-0.0", "-0"), (b"1.0", "1"), (b"1.5", "1.5"), (b"0.1", "0.1"),
    (b"123456", "123456"), (b"123456.0", "123456"), (b"1000000.0", "1e+06"), (b"1234567.5", "1.2345675e+06"),
    (b"0.0001", "0.0001"), (b"0.00001", "1e-05"), (b"1e21", "1e+21"), (b"1e-7", "1e-07"), (b"1.5e300", "1.5e+300"),
    (b"9223372036854775807", "9223372036854775807"), (b"18446744073709551615", "18446744073709551615"),
    (b"18446744073709551616", "1.8446744073709552e+19"),  # past 64 bits yaml.v2 reads a float
    (b"-9223372036854775809", "-9.223372036854776e+18"),
    (b"true", "true"), (b"null", "null"), (b"[]", "[]"), (b"{}", "{}"),
]
# fmt: on


@pytest.mark.parametrize(("value", "printed"), NUMBERS)
def test_yaml_scalars(value: bytes, printed: str) -> None:
    assert yaml.json_to_yaml(b'{"k":' + value + b"}").decode() == f"k: {printed}\n"


@pytest.mark.parametrize(
    ("value", "bits", "printed"),
    [
        (0.1, 32, "0.1"),
        (1.1, 32, "1.1"),
        (16777217.0, 32, "1.6777216e+07"),
        (1 / 3, 32, "0.33333334"),
        (1 / 3, 64, "0.3333333333333333"),
    ],
)
def test_go_format_float(value: float, bits: int, printed: str) -> None:
    assert yaml.go_format_float(value, bits) == printed


def test_yaml_key_order_is_yaml_v2s() -> None:
    keys = ["b", "a", "B", "_x", "10", "9", "a10", "a9", "a-b", "a.b", "ab", "a", "Z", "ä", "x01", "x1", "x001"]
    document = yaml.json_to_yaml(orjson.dumps(dict.fromkeys(keys, 1))).decode()
    order = [line.split(":")[0].strip('"') for line in document.splitlines()]
    # Non-letters before letters, letters by code point, digit runs by value.
    assert order == ["_x", "9", "10", "B", "Z", "a", "a-b", "a.b", "a9", "a10", "ab", "b", "x1", "x01", "x001", "ä"]


def test_yaml_folds_long_lines_at_80_columns() -> None:
    text = " ".join(["word"] * 30)
    document = yaml.json_to_yaml(orjson.dumps({"description": text})).decode()
    assert document == (
        "description: word word word word word word word word word word word word word word\n"
        "  word word word word word word word word word word word word word word word word\n"
    )
    assert stdjson.loads(yaml.yaml_to_json(document.encode())) == {"description": text}


# YAML request bodies and the JSON the core gets (yaml.v2's YAML 1.1 reading).
# fmt: off
LOADS: list[tuple[str, Any]] = [
    ("a: 1\nb: two\n", {"a": 1, "b": "two"}),
    ("", None), ("---\n", None), ("# only a comment\n", None),
    ("- 1\n- x\n", [1, "x"]),
    ('{"kind": "Pod", "n": 1.0}', {"kind": "Pod", "n": 1}),  # JSON is YAML; 1.0 becomes 1 as Go prints it
    ("a: yes\nb: On\nc: y\nd: n\ne: off\nf: TRUE\n",
     {"a": True, "b": True, "c": True, "d": False, "e": False, "f": True}),
    ("a: ~\nb: null\nc:\n", {"a": None, "b": None, "c": None}),
    ("a: 0x1F\nb: 0o17\nc: 017\nd: 08\ne: 1_000\nf: 0b101\ng: -0b101\nh: +12\n",
     {"a": 31, "b": 15, "c": 15, "d": 8, "e": 1000, "f": 5, "g": -5, "h": 12}),
    ("a: 1.5\nb: .5\nc: 1e3\nd: 99999999999999999999\ne: 0xFFFFFFFFFFFFFFFFFF\n",
     {"a": 1.5, "b": 0.5, "c": 1000, "d": 100000000000000000000, "e": 0xFFFFFFFFFFFFFFFFFF}),
    ("a: 2024-01-01\nb: 1:20\nc: 1e400\nd: '8080'\ne: \"yes\"\n",
     {"a": "2024-01-01", "b": "1:20", "c": "1e400", "d": "8080", "e": "yes"}),
    ("a: !!str 12\nb: !!float 3\nc: !!int '7'\nd: !custom x\ne: ! 5\n",
     {"a": "12", "b": 3, "c": 7, "d": "x", "e": "5"}),
    ("b: !!binary |\n  aGVs\n  bG8=\n", {"b": "hello"}),
    ("1: one\n1.5: x\ntrue: t\nno: n\n0.1: z\n", {"1": "one", "1.5": "x", "true": "t", "false": False, "0.1": "z"}),
    ("base: &b {x: 1, z: 2}\nc:\n  <<: *b\n  z: 3\nd: [*b, *b]\n",
     {"base": {"x": 1, "z": 2}, "c": {"x": 1, "z": 3}, "d": [{"x": 1, "z": 2}, {"x": 1, "z": 2}]}),
    ("a: &a {p: 1}\nb: &b {p: 2, q: 2}\nc:\n  <<: [*a, *b]\n",
     {"a": {"p": 1}, "b": {"p": 2, "q": 2}, "c": {"p": 1, "q": 2}}),
    ("c:\n  z: 3\n  <<: {z: 4}\n", {"c": {"z": 4}}),  # yaml.v2 merges in document order
    ("a: 1\na: 2\n", {"a": 2}),  # duplicates: the last wins
    ("a: 1\n---\n", {"a": 1}),  # an empty second document is harmless
    ("data:\n  key: |\n    line1\n    line2\n", {"data": {"key": "line1\nline2\n"}}),
]
# fmt: on


@pytest.mark.parametrize(("document", "value"), LOADS)
def test_yaml_loads(document: str, value: Any) -> None:
    assert yaml.load(document.encode()) == value
    decoded = codec_for(YAML).decode(document.encode())
    assert decoded == Decoded(yaml.yaml_to_json(document.encode()))
    assert stdjson.loads(decoded.data) == value


def test_yaml_to_json_is_compact_with_sorted_keys() -> None:
    assert yaml.yaml_to_json(b"kind: Pod\napiVersion: v1\nmetadata:\n  name: p\n  labels: {b: x, a: z}\n") == (
        b'{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"a":"z","b":"x"},"name":"p"}}'
    )


# yaml.v2's words; its line numbers count from 1 for scanner errors and from 0 for parser errors.
# fmt: off
YAML_ERRORS: list[tuple[bytes, str]] = [
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata: name: x\n",
     "yaml: line 3: mapping values are not allowed in this context"),
    (b"a: b: c\n", "yaml: mapping values are not allowed in this context"),  # line 1 has index 0: no line
    (b"a: b\n  c: d\n", "yaml: line 2: mapping values are not allowed in this context"),
    (b"a: [1, 2\n", "yaml: line 1: did not find expected ',' or ']'"),
    (b"a:\n  b: 1\n c: 2\n", "yaml: line 2: did not find expected key"),  # the problem is on line 3
    (b'a: "x\n', "yaml: line 2: found unexpected end of stream"),
    (b"a: 1\n\tb: 2\n", "yaml: line 2: found a tab character that violate indentation"),  # sic
    (b"a: @x\n", "yaml: found character that cannot start any token"),
    (b"\x80abc", "yaml: invalid leading UTF-8 octet"),
    (b"a: *nope\n", "yaml: unknown anchor 'nope' referenced"),
    (b"a: &a [*a]\n", "yaml: anchor 'a' value contains itself"),
    (b"a: !!int abc\n", "yaml: cannot decode !!str `abc` as a !!int"),
    (b"a: !!bool 5\n", "yaml: cannot decode !!int `5` as a !!bool"),
    (b"a: !!binary '%%%'\n", "yaml: !!binary value contains invalid base64 data"),
    (b"a:\n  <<: 5\n", "yaml: map merge requires map or sequence of maps as the value"),
    (b"a:\n  <<: [{x: 1}, 2]\n", "yaml: map merge requires map or sequence of maps as the value"),
    (b"? [1, 2]\n: x\n", "yaml: invalid map key: [1, 2]"),
    (b"a: .nan\n", "json: unsupported value: NaN"),
    (b"a: -.inf\n", "json: unsupported value: -Inf"),
    (b"~: x\n", "unsupported map key of type: <nil>, key: None"),
    (b"a: 1\n---\nb: 2\n", "yaml: line 2: the body holds more than one YAML document"),
]
# fmt: on


@pytest.mark.parametrize(("document", "message"), YAML_ERRORS)
def test_yaml_errors(document: bytes, message: str) -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        codec_for(YAML).decode(document)
    assert caught.value.message == str(caught.value) == message
    assert caught.value.converting == f"error converting YAML to JSON: {message}"
    assert isinstance(caught.value, DECODE_ERRORS)


def test_yaml_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(8)]
    with pytest.raises(yaml.YAMLError, match=r"^yaml: document contains excessive aliasing$"):
        yaml.load("\n".join(lines).encode())


def test_yaml_nesting_is_bounded() -> None:
    assert yaml.yaml_to_json(b"[" * 200 + b"]" * 200) == b"[" * 200 + b"]" * 200
    with pytest.raises(yaml.YAMLError, match=r"^yaml: the document nests too deeply$"):
        yaml.yaml_to_json(b"[" * 5000 + b"]" * 5000)


@pytest.mark.parametrize("document", [CONFIG_MAP, {"items": [CONFIG_MAP, {}, [], None, 1.25, "x"]}, [1, "2", None]])
def test_yaml_round_trip(document: Any) -> None:
    assert stdjson.loads(yaml.yaml_to_json(yaml.json_to_yaml(orjson.dumps(document)))) == document


# --- registry --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("media_type", "name", "core_encoding", "streams"),
    [
        (JSON, CodecName.JSON, "json", True),
        (YAML, CodecName.YAML, "json", False),
        (PROTOBUF, CodecName.PROTOBUF, "protobuf", True),
        (PatchType.JSON_PATCH, CodecName.JSON, "json", True),
        (PatchType.MERGE_PATCH, CodecName.JSON, "json", True),
        (PatchType.STRATEGIC_MERGE_PATCH, CodecName.JSON, "json", True),
        (PatchType.APPLY_PATCH, CodecName.YAML, "json", False),
    ],
)
def test_registry(media_type: str, name: CodecName, core_encoding: str, streams: bool) -> None:
    codec = codec_for(media_type)
    assert (codec.name, codec.core_encoding, codec.encode_watch_event is not None) == (name, core_encoding, streams)
    assert CODECS[media_type] is codec


def test_registry_protobuf_round_trip() -> None:
    codec = codec_for(PROTOBUF)
    body = codec.encode(CLIENT_GO_CONFIG_MAP, api_version="v1", kind="ConfigMap", pretty=True)
    assert body == CLIENT_GO_ENVELOPE
    assert codec.decode(body) == Decoded(CLIENT_GO_CONFIG_MAP, "v1", "ConfigMap")
    with pytest.raises(DECODE_ERRORS, match="expected prefix"):
        codec.decode(b"{}")


def test_registry_refuses_unknown_media_types() -> None:
    with pytest.raises(LookupError, match="no codec for media type 'text/plain'"):
        codec_for("text/plain")


@pytest.mark.parametrize(
    ("body", "summary"),
    [
        (b"", "<empty>"),
        (b'{"kind":"Pod"}', '{"kind":"Pod"}'),
        (b'{"kind":"Pod","apiVersion":"v1","metadata":{}}', '{"kind":"Pod","apiVersion":"v1 ...'),
        (b"apiVersion: v1\nkind: ConfigMap\n", "61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 ..."),
        (b"k8s\x00\x0a", "6b3873000a"),
    ],
)
def test_summarize_is_kube_apiservers(body: bytes, summary: str) -> None:
    assert summarize(body) == summary
