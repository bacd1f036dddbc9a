"""What the fuzz suites send: valid requests of every kind Capstan serves, and hypothesis strategies that bend
them — bytes flipped, cut or spliced with tokens parsers trip on, documents with a member replaced by any
JSON value, query parameters and media types with values valid, nearly valid and arbitrary.

Starting from valid input keeps most examples past the first parser, where the interesting failures are;
the arbitrary tail keeps the first parser honest. `python -m bench.fuzz` draws from the same strategies.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import orjson
import yaml
from hypothesis import strategies as st

from capstan.api.core.v1 import core_pb2 as core
from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.codecs import protobuf as protobuf_codec
from tests.fuzz.harness import HttpRequest

Obj = dict[str, Any]
CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SEEDED = "fuzz"  # the ConfigMap and Pod every run starts with (seed_objects)

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PATCH_TYPES = {
    "json-patch": "application/json-patch+json",
    "merge-patch": "application/merge-patch+json",
    "strategic-merge-patch": "application/strategic-merge-patch+json",
    "apply-patch+yaml": "application/apply-patch+yaml",
}

CONFIGMAP: Obj = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "fuzz-new", "labels": {"app": "fuzz"}, "annotations": {"a": "b"}},
                  "data": {"key": "value", "other": "x"}, "binaryData": {"bin": "AAE="}}
POD: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fuzz-pod", "labels": {"app": "fuzz"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                                     "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                                     "env": [{"name": "A", "value": "1"}]}],
                     "tolerations": [{"key": "k", "operator": "Exists"}]}}
DEPLOYMENT: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "fuzz-deploy"},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "fuzz"}},
                            "template": {"metadata": {"labels": {"app": "fuzz"}},
                                         "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}
PATCHES: dict[str, Any] = {
    "json-patch": [{"op": "replace", "path": "/data/key", "value": "v2"},
                   {"op": "add", "path": "/metadata/labels/new", "value": "y"},
                   {"op": "test", "path": "/metadata/name", "value": SEEDED}],
    "merge-patch": {"metadata": {"labels": {"new": "y"}}, "data": {"key": None, "added": "z"}},
    "strategic-merge-patch": {"metadata": {"labels": {"new": "y"}, "$setElementOrder/finalizers": []},
                              "data": {"key": "v3"}},
    "apply-patch+yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": SEEDED},
                         "data": {"key": "applied"}},
}
POD_PATCH: Obj = {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}
DELETE_OPTIONS: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                       "gracePeriodSeconds": 0, "preconditions": {"resourceVersion": "1"}}

SEED_OBJECTS: list[tuple[str, Obj]] = [
    (CM, {**CONFIGMAP, "metadata": {"name": SEEDED, "labels": {"app": "fuzz"}}}),
    (PODS, {**POD, "metadata": {"name": SEEDED}}),
    (DEPLOYMENTS, {**DEPLOYMENT, "metadata": {"name": SEEDED}}),
]

# Tokens that parsers of JSON, YAML, protobuf and selectors treat specially.
TOKENS = [b"{", b"}", b"[", b"]", b'"', b"\\", b"\x00", b"\xff", b"\xc3", b"null", b"1e999", b"-0", b"NaN",
          b'"\\ud800"', b"\\u0000", b"[" * 300, b"{\"a\":" * 250, b"&a ", b"*a", b"!!binary ", b"!!python/object ",
          b"? ", b"- ", b"\n  ", b"\t", b"k8s\x00", b"\x0a\xff\xff\xff\xff\x0f", b"\x12\x80\x80\x80\x80\x10",
          b"9" * 40, b"\xef\xbb\xbf", b"---\n", b"<<: *a", b"%YAML 1.1\n"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated_bytes(draw: st.DrawFn, valid: bytes) -> bytes:
    """`valid` with one to four edits: a byte changed, a range removed or repeated, a token spliced in, a cut."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["flip", "delete", "repeat", "token", "truncate", "insert"]))
        if edit == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif edit == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif edit == "repeat":
            data[at:at] = data[at:at + draw(st.integers(1, 32))] * draw(st.integers(1, 8))
        elif edit == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif edit == "truncate":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _paths(value, (*prefix, index))
    return out


@st.composite
def mutated_doc(draw: st.DrawFn, valid: Any) -> Any:
    """`valid` (a JSON document) with one to three members replaced, removed or added."""
    doc = orjson.loads(orjson.dumps(valid))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        value = draw(json_values)
        if not path:
            doc = value
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        edit = draw(st.sampled_from(["replace", "remove", "add"]))
        if edit == "remove":
            del parent[path[-1]]
        elif edit == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = value
        else:
            parent[path[-1]] = value
    return doc


def encode(doc: Any, media_type: str) -> bytes:
    """The document in JSON or YAML (kube reads both for every body but the protobuf envelope)."""
    if media_type.endswith("yaml"):
        return yaml.safe_dump(doc, allow_unicode=True).encode()
    return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)


def configmap_envelope(name: str = "fuzz-pb") -> bytes:
    message = core.ConfigMap(metadata=meta_pb2.ObjectMeta(name=name, labels={"app": "fuzz"}),
                             data={"key": "value"}, binaryData={"bin": b"\x00\x01"})
    return protobuf_codec.encode_envelope("v1", "ConfigMap", message.SerializeToString())


@st.composite
def body_of(draw: st.DrawFn, valid: Any, media_type: str) -> bytes:
    """A body of `valid` in `media_type`: as is, with its document bent, or with its bytes bent."""
    how = draw(st.sampled_from(["valid", "doc", "bytes", "doc", "bytes"]))
    if how == "doc":
        return encode(draw(mutated_doc(valid)), media_type)
    raw = encode(valid, media_type)
    return draw(mutated_bytes(raw)) if how == "bytes" else raw


# (method, path, valid document, the Content-Types it is sent as)
WRITES: list[tuple[str, str, Any, tuple[str, ...]]] = [
    ("POST", CM, CONFIGMAP, (JSON, YAML)),
    ("PUT", f"{CM}/{SEEDED}", {**CONFIGMAP, "metadata": {"name": SEEDED}}, (JSON, YAML)),
    ("POST", PODS, POD, (JSON, YAML)),
    ("POST", DEPLOYMENTS, DEPLOYMENT, (JSON,)),
    ("PATCH", f"{PODS}/{SEEDED}", POD_PATCH, (PATCH_TYPES["strategic-merge-patch"], PATCH_TYPES["merge-patch"])),
    ("DELETE", f"{CM}/absent", DELETE_OPTIONS, (JSON,)),
    *[("PATCH", f"{CM}/{SEEDED}", doc, (PATCH_TYPES[kind],)) for kind, doc in PATCHES.items()],
    ("PATCH", f"{CM}/fuzz-applied", {**PATCHES["apply-patch+yaml"], "metadata": {"name": "fuzz-applied"}},
     (PATCH_TYPES["apply-patch+yaml"], JSON)),
]


@st.composite
def body_requests(draw: st.DrawFn) -> HttpRequest:
    """A write with a body of any encoding Capstan reads, bent or not."""
    transport = draw(st.sampled_from(["inprocess", "grpc"]))
    if draw(st.integers(0, 5)) == 0:  # the protobuf envelope: only its bytes can be bent
        body = draw(st.sampled_from([configmap_envelope(), b"k8s\x00"]))
        body = draw(mutated_bytes(body)) if draw(st.booleans()) else body
        return HttpRequest("POST", CM, (("Content-Type", PROTOBUF), ("Accept", draw(answer_types))), body, transport)
    method, path, valid, media_types = draw(st.sampled_from(WRITES))
    media_type = draw(st.sampled_from(media_types))
    query = "?fieldManager=fuzz" if media_type == PATCH_TYPES["apply-patch+yaml"] else ""
    body = draw(body_of(valid, "yaml" if media_type == PATCH_TYPES["apply-patch+yaml"] else media_type))
    return HttpRequest(method, path + query, (("Content-Type", media_type), ("Accept", draw(answer_types))),
                       body, transport)


# Query strings: each parameter kube reads, valid values first, then near misses and anything.

PARAMETERS: dict[str, list[str]] = {
    "labelSelector": ["app=fuzz", "app in (a,b),!x", "a!=b,c", "app notin (x)", "a=b,c=d,e", "x>1", "a=b=c",
                      "in (", "!", "app==x", "a" * 64 + "=b", "a/b/c=d", "-a=b", "a=" + "v" * 70],
    "fieldSelector": ["metadata.name=fuzz", "metadata.namespace!=x", "spec.nodeName=", "status.phase=Running",
                      "metadata.name==a", "x=y", "metadata.name", "a=b,", "=", "metadata.name=a\\,b"],
    "limit": ["1", "0", "500", "-1", "99999999999999999999", "1.5", "abc", ""],
    "continue": ["", "abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0", "%%%", "e30"],
    "resourceVersion": ["", "0", "1", "abc", "-1", "18446744073709551616", "99999999"],
    "resourceVersionMatch": ["", "NotOlderThan", "Exact", "bogus"],
    "watch": ["1", "true", "false", "0", "yes", ""],
    "allowWatchBookmarks": ["true", "false", "x"],
    "timeoutSeconds": ["1", "0", "-1", "abc", "99999999999999999999"],
    "dryRun": ["All", "", "all", "Bogus"],
    "fieldValidation": ["Strict", "Warn", "Ignore", "strict", "bogus", ""],
    "fieldManager": ["fuzz", "", "x" * 200, "\x01"],
    "force": ["true", "false", "x"],
    "propagationPolicy": ["Foreground", "Background", "Orphan", "bogus", ""],
    "gracePeriodSeconds": ["0", "30", "-1", "abc"],
    "orphanDependents": ["true", "false", "x"],
    "pretty": ["true", "1", "x"],
    "sendInitialEvents": ["true", "false"],
    "includeUninitialized": ["true"],
}
GETS = [CM, f"{CM}/{SEEDED}", PODS, f"{PODS}/{SEEDED}", "/api/v1/configmaps", "/api/v1/namespaces",
        "/api/v1/namespaces/default", DEPLOYMENTS, f"{DEPLOYMENTS}/{SEEDED}/scale", f"{PODS}/{SEEDED}/status",
        "/apis/apps/v1/deployments"]
printable = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


@st.composite
def query_value(draw: st.DrawFn, name: str) -> str:
    """Percent-encoded: a known value, arbitrary text, or raw bytes (invalid UTF-8 included)."""
    kind = draw(st.sampled_from(["known", "known", "text", "bytes", "raw"]))
    if kind == "known":
        return urllib.parse.quote(draw(st.sampled_from(PARAMETERS.get(name, [""]))), safe="")
    if kind == "text":
        return urllib.parse.quote(draw(st.text(max_size=30)), safe="")
    if kind == "bytes":
        return "".join(f"%{b:02X}" for b in draw(st.binary(max_size=12)))
    return draw(st.text(printable.filter(lambda c: c not in "#& "), max_size=12))


@st.composite
def query_requests(draw: st.DrawFn) -> HttpRequest:
    """A read, watch or delete with any mix of kube's query parameters (and some it does not know)."""
    names = draw(st.lists(st.sampled_from(sorted(PARAMETERS)) | st.text(printable.filter(str.isalnum), max_size=8),
                          min_size=1, max_size=5))
    query = "&".join(f"{name}={draw(query_value(name))}" for name in names)
    method = draw(st.sampled_from(["GET", "GET", "GET", "DELETE"]))
    path = draw(st.sampled_from(GETS))
    if method == "DELETE":  # never the seeded objects: later examples read them
        path = draw(st.sampled_from([f"{CM}/absent", f"{PODS}/absent", "/api/v1/namespaces/default/secrets"]))
    if "watch" in names:
        query += "&timeoutSeconds=1"
    return HttpRequest(method, f"{path}?{query}", (("Accept", draw(answer_types)),),
                       transport=draw(st.sampled_from(["inprocess", "grpc"])))


# Media types: what clients send, then bent.

ACCEPTS = [JSON, YAML, PROTOBUF, "*/*", "application/*", "application/json;as=Table;v=v1;g=meta.k8s.io",
           "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
           "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", "application/json;stream=watch",
           "application/vnd.kubernetes.protobuf;stream=watch", "text/html", "application/json;q=0.5, */*;q=0.1",
           "application/json;q=abc", "application/json;as=", ";;;", "application/json;as=Table;g", ""]
bent_media_type = st.builds(
    lambda base, cut, extra: base[:cut] + extra,
    st.sampled_from(ACCEPTS), st.integers(0, 60), st.text(printable, max_size=20))
accepts = st.sampled_from(ACCEPTS) | bent_media_type | st.text(printable, max_size=40)
# What bodies and queries are read back as: the encodings clients ask for, so most examples reach the handler.
answer_types = st.sampled_from([JSON, JSON, JSON, YAML, PROTOBUF, "*/*", ACCEPTS[5], ACCEPTS[7]])
content_types = (st.sampled_from([JSON, YAML, PROTOBUF, *PATCH_TYPES.values()]) | bent_media_type
                 | st.text(printable, max_size=40))


@st.composite
def header_requests(draw: st.DrawFn) -> HttpRequest:
    """A valid read or write with any Accept and Content-Type."""
    transport = draw(st.sampled_from(["inprocess", "grpc"]))
    method, path, valid, media_types = draw(st.sampled_from(WRITES))
    body = encode(valid, media_types[0])
    if draw(st.booleans()):
        method, path, body = "GET", draw(st.sampled_from(GETS)), b""
    headers = [("Accept", draw(accepts))]
    if body:
        headers.append(("Content-Type", draw(content_types)))
        if draw(st.booleans()) and "apply" in headers[-1][1]:
            path += "?fieldManager=fuzz"
    return HttpRequest(method, path, tuple(headers), body or None, transport)


# gRPC: each CoreService method, its request as bytes.

def _path(**fields: str) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default", **fields)


def _raw(doc: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(doc))


VALID_CALLS: list[tuple[str, bytes]] = [(method, message.SerializeToString()) for method, message in [
    ("Create", core_pb2.CreateRequest(path=_path(), object=_raw(CONFIGMAP), accept=core_pb2.ENCODING_JSON)),
    ("Create", core_pb2.CreateRequest(path=_path(), object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_YAML, data=encode(CONFIGMAP, YAML)), accept=core_pb2.ENCODING_YAML)),
    ("Create", core_pb2.CreateRequest(path=_path(), object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_PROTOBUF, data=configmap_envelope()), accept=core_pb2.ENCODING_PROTOBUF)),
    ("Get", core_pb2.GetRequest(path=_path(name=SEEDED), accept=core_pb2.ENCODING_JSON)),
    ("Get", core_pb2.GetRequest(path=_path(name=SEEDED), accept=core_pb2.ENCODING_JSON,
                                view=core_pb2.ViewOptions(view=core_pb2.VIEW_TABLE, api_version="meta.k8s.io/v1"))),
    ("List", core_pb2.ListRequest(path=_path(), options=meta_pb2.ListOptions(labelSelector="app=fuzz", limit=2),
                                  accept=core_pb2.ENCODING_PROTOBUF)),
    ("Update", core_pb2.UpdateRequest(path=_path(name=SEEDED), object=_raw({**CONFIGMAP, "metadata": {
        "name": SEEDED}}), accept=core_pb2.ENCODING_JSON)),
    *[("Patch", core_pb2.PatchRequest(path=_path(name=SEEDED), type=kind, patch=encode(PATCHES[name], JSON),
                                      options=meta_pb2.PatchOptions(fieldManager="fuzz")))
      for kind, name in [(core_pb2.PATCH_TYPE_JSON, "json-patch"), (core_pb2.PATCH_TYPE_MERGE, "merge-patch"),
                         (core_pb2.PATCH_TYPE_STRATEGIC_MERGE, "strategic-merge-patch"),
                         (core_pb2.PATCH_TYPE_APPLY, "apply-patch+yaml")]],
    ("Delete", core_pb2.DeleteRequest(path=_path(name="absent"), options=meta_pb2.DeleteOptions(
        propagationPolicy="Background"))),
    ("DeleteCollection", core_pb2.DeleteCollectionRequest(
        path=_path(), list_options=meta_pb2.ListOptions(labelSelector="app=absent"))),
    ("Watch", core_pb2.WatchRequest(path=_path(), options=meta_pb2.ListOptions(
        resourceVersion="1", timeoutSeconds=1), accept=core_pb2.ENCODING_JSON)),
    ("Discover", core_pb2.DiscoverRequest(known_generation=0)),
    ("Access", core_pb2.AccessRequest(verb="get", path=f"{CM}/{SEEDED}")),
    ("IssuerDocument", core_pb2.IssuerDocumentRequest(path="/.well-known/openid-configuration")),
    ("Proxy", core_pb2.ProxyRequest(verb="list", path=core_pb2.ResourcePath(
        group="wardle.example", version="v1alpha1", resource="flunders"), url_path="/apis/wardle.example/v1alpha1")),
    ("Metrics", core_pb2.MetricsRequest()),
]]
METHODS = sorted({method for method, _ in VALID_CALLS} | {"RegisterDescriptors"})
STREAMING = frozenset({"Watch"})


@st.composite
def raw_calls(draw: st.DrawFn) -> tuple[str, bytes]:
    """Any bytes to any method: most are not a message at all."""
    return draw(st.sampled_from(METHODS)), draw(st.binary(max_size=120))


@st.composite
def mutated_calls(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid request to its method with its bytes bent (unknown fields, enums and broken lengths)."""
    method, valid = draw(st.sampled_from(VALID_CALLS))
    return method, draw(mutated_bytes(valid))


@st.composite
def field_calls(draw: st.DrawFn) -> tuple[str, bytes]:
    """Well-formed messages whose fields hold anything: paths, selectors, enum numbers no version defines."""
    text = st.text(max_size=20)
    path = core_pb2.ResourcePath(group=draw(st.sampled_from(["", "apps", "x.io"]) | text),
                                 version=draw(st.sampled_from(["v1", ""]) | text),
                                 resource=draw(st.sampled_from(["configmaps", "pods", "deployments", ""]) | text),
                                 namespace=draw(st.sampled_from(["default", ""]) | text),
                                 name=draw(st.sampled_from([SEEDED, ""]) | text),
                                 subresource=draw(st.sampled_from(["", "status", "scale"]) | text))
    options = meta_pb2.ListOptions(labelSelector=draw(st.sampled_from(PARAMETERS["labelSelector"]) | text),
                                   fieldSelector=draw(st.sampled_from(PARAMETERS["fieldSelector"]) | text),
                                   resourceVersion=draw(st.sampled_from(PARAMETERS["resourceVersion"]) | text),
                                   limit=draw(st.integers(-(2**63), 2**63 - 1)),
                                   timeoutSeconds=draw(st.integers(-(2**63), 1)))
    setattr(options, "continue", draw(st.sampled_from(PARAMETERS["continue"]) | text))
    encoding: Any = draw(st.integers(0, 7))  # enum numbers no version defines included
    view: Any = draw(st.integers(0, 6))
    patch_type: Any = draw(st.integers(0, 6))
    doc = draw(mutated_doc(CONFIGMAP))
    method, message = draw(st.sampled_from([
        ("List", core_pb2.ListRequest(path=path, options=options, accept=encoding)),
        ("Get", core_pb2.GetRequest(path=path, accept=encoding, view=core_pb2.ViewOptions(
            view=view, api_version=draw(text), include_object=draw(text)))),
        ("Create", core_pb2.CreateRequest(path=path, accept=encoding, object=core_pb2.RawObject(
            encoding=encoding, data=orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)))),
        ("Patch", core_pb2.PatchRequest(path=path, type=patch_type, patch=draw(st.binary(max_size=40)),
                                        options=meta_pb2.PatchOptions(fieldManager=draw(text)))),
        ("DeleteCollection", core_pb2.DeleteCollectionRequest(path=path, list_options=options)),
        ("Watch", core_pb2.WatchRequest(path=path, options=options, accept=encoding)),
    ]))
    return method, message.SerializeToString()
