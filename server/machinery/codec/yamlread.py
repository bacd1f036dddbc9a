"""YAML request bodies read as kube-apiserver reads them: sigs.k8s.io/yaml's YAMLToJSON over yaml.v2.

Every YAML body a client sends (an object to create or update, an apply configuration, DeleteOptions,
over REST or gRPC) goes through read() here, so one set of rules and one set of bounds holds for all:

- YAML 1.1 values as yaml.v2 resolves them (server/machinery/codec/yamlresolve.py), anchors, aliases and ``<<``
  merge keys, non-string keys turned to strings, JSON-style flow collections with a trailing comma
  (``{"a": 1,}``, ``[80, 443,]``) as libyaml takes them;
- a key given twice in one mapping: the last wins (yaml.Unmarshal), and each repetition is recorded
  in yaml.v2 UnmarshalStrict's words, ``line 9: key "foo" already set in map``, the line being that
  of the repeated key's value; fieldValidation decides what they do (Document.duplicates);
- bounds: alias bombs are refused as yaml.v2 refuses them ("document contains excessive aliasing",
  after at most a few hundred thousand decoded nodes, so a 360-byte bomb fails in milliseconds) and
  nesting deeper than server/machinery/codec/depth.py's bound is refused with Capstan's own "the document nests
  too deeply";
- errors carry yaml.v2's words and line numbers (1-based for scanner errors, one less for parser
  errors, a quirk clients see from kube-apiserver), e.g. ``yaml: line 3: mapping values are not
  allowed in this context``. Unlike yaml.v2, which silently reads only the first document, a body
  holding a second document with content is refused.

The part that needs PyYAML (its events composed into nodes, its errors in yaml.v2's words) is yamlparse.py,
loaded with the first YAML body; the decoding of those nodes into values is here.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.machinery.codec import depth, gofloat
from server.machinery.codec.yamlresolve import BINARY, MERGE, TIMESTAMP, YAMLError, go_format_float, resolve
from server.machinery.gofmt import go_quote

if TYPE_CHECKING:
    from server.machinery.codec.yamlparse import Node

__all__ = ["Document", "YAMLError", "load", "read", "yaml_to_json"]

TOO_DEEP = "yaml: the document nests too deeply"  # Capstan's own: Go's stack is deeper than Python's


@dataclass(frozen=True)
class Document:
    """A YAML body's JSON value (None for an empty body) and the keys it repeats.

    duplicates are yaml.v2 UnmarshalStrict's errors in document order; kube-apiserver reports them
    as one error for Strict (strict_error) and one warning each for Warn."""

    value: Any
    duplicates: tuple[str, ...] = ()

    @property
    def strict_error(self) -> str:
        """yaml.v2's TypeError for the repeated keys: "yaml: unmarshal errors:\\n  line 9: ..."."""
        return "yaml: unmarshal errors:\n  " + "\n  ".join(self.duplicates)


def read(body: bytes) -> Document:
    """The body as YAMLToJSON reads it, and its repeated keys. Raises YAMLError."""
    from server.machinery.codec import yamlparse  # PyYAML loads with the first YAML body

    try:
        root = yamlparse.compose(body)
        if root is None:
            return Document(None)
        decoder = _Decoder()
        value = _json_value(decoder.value(root))
        if depth.exceeded(value) is not None:
            raise YAMLError(TOO_DEEP)
        return Document(value, tuple(decoder.duplicates))
    except RecursionError:
        raise YAMLError(TOO_DEEP) from None


def load(body: bytes) -> Any:
    """The JSON value of a YAML body (None for an empty one), the last of a repeated key winning."""
    return read(body).value


def yaml_to_json(body: bytes) -> bytes:
    """sigs.k8s.io/yaml.YAMLToJSON: compact JSON with sorted keys. Raises YAMLError."""
    return to_json(load(body))


def to_json(value: Any) -> bytes:
    """A value read here as YAMLToJSON prints it: compact, keys sorted (encoding/json's map order)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    except RecursionError:
        raise YAMLError(TOO_DEEP) from None


# --- yaml.v2's decoder into interface{} (decode.go) -----------------------------------------------


class _Decoder:
    """Nodes to Python values as yaml.v2 decodes into interface{}, with its guard against
    alias bombs ("document contains excessive aliasing") and UnmarshalStrict's record of keys
    set twice in one map (merge keys included, as yaml.v2 counts them)."""

    def __init__(self) -> None:
        self.decoded = self.aliased = self.alias_depth = 0
        self.active: set[int] = set()
        self.duplicates: list[str] = []

    def value(self, node: Node, into: dict[tuple[str, Any], tuple[Any, Any]] | None = None) -> Any:
        self.decoded += 1
        if self.alias_depth:
            self.aliased += 1
        if (
            self.aliased > 100
            and self.decoded > 1000
            and self.aliased / self.decoded > _allowed_alias_ratio(self.decoded)
        ):
            raise YAMLError("yaml: document contains excessive aliasing")
        if node.kind == "alias":
            assert node.alias is not None
            if id(node) in self.active:
                raise YAMLError(f"yaml: anchor '{node.value}' value contains itself")
            self.active.add(id(node))
            self.alias_depth += 1
            try:
                return self.value(node.alias, into)
            finally:
                self.alias_depth -= 1
                self.active.discard(id(node))
        if node.kind == "scalar":
            return self.scalar(node)
        if node.kind == "sequence":
            return [self.value(child) for child in node.children]
        pairs = {} if into is None else into
        for key_node, value_node in zip(node.children[::2], node.children[1::2], strict=True):
            if key_node.kind == "scalar" and key_node.value == "<<" and (key_node.implicit or key_node.tag == MERGE):
                self.merge(value_node, pairs)
                continue
            key = self.value(key_node)
            if isinstance(key, (dict, list)):
                raise YAMLError(f"yaml: invalid map key: {key!r}")
            item = self.value(value_node)
            slot = (type(key).__name__, key)
            if slot in pairs:
                self.duplicates.append(f"line {value_node.line + 1}: key {_go_v_key(key)} already set in map")
            pairs[slot] = (key, item)
        return pairs

    def merge(self, node: Node, into: dict[tuple[str, Any], tuple[Any, Any]]) -> None:
        target = node.alias if node.kind == "alias" else node
        if target is not None and target.kind == "mapping":
            self.value(node, into)
        elif node.kind == "sequence" and all((c.alias or c).kind == "mapping" for c in node.children):
            for child in reversed(node.children):
                self.value(child, into)
        else:
            raise YAMLError("yaml: map merge requires map or sequence of maps as the value")

    def scalar(self, node: Node) -> Any:
        if not node.tag and not node.implicit:
            return node.value  # quoted
        tag, value = resolve(node.tag, node.value)
        if tag == BINARY:
            try:
                data = base64.b64decode(
                    value.replace("\n", "").replace("\r", ""), validate=True
                )  # Go skips line breaks
                return data.decode("utf-8", "replace")
            except binascii.Error:
                raise YAMLError("yaml: !!binary value contains invalid base64 data") from None
        return node.value if tag == TIMESTAMP else value  # timestamps stay strings in interface{}


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decoded - 400_000) / 3_600_000


def _go_v_key(key: Any) -> str:
    """fmt's %#v of a decoded map key, as UnmarshalStrict prints it: "foo", 1, true, 1.5, <nil>."""
    if isinstance(key, str):
        return go_quote(key)
    if key is None:
        return "<nil>"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return hex(key) if key >= 1 << 63 else str(key)  # yaml.v2 keeps those as uint64, which %#v prints in hex
    number = float(key)
    return _go_float_name(number) if not math.isfinite(number) else gofloat.format_g(number, 64)


def _json_value(value: Any) -> Any:
    """sigs.k8s.io/yaml's convertToJSONableObject, then what encoding/json refuses or prints."""
    if isinstance(value, dict):
        return {_json_key(key): _json_value(item) for key, item in value.values()}
    if isinstance(value, list):
        return [_json_value(item) for item in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise YAMLError(f"json: unsupported value: {_go_float_name(value)}")
        if value.is_integer() and abs(value) < 1e21:
            return int(value)  # encoding/json prints 1.0 as 1, which Go's integer fields accept
    return value


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and -(1 << 63) <= key < (1 << 63):
        return str(key)
    if isinstance(key, float):
        return go_format_float(key, 32)  # sic: sigs.k8s.io/yaml formats float keys at 32 bits
    raise YAMLError(f"unsupported map key of type: {_go_type(key)}, key: {key!r}")


def _go_type(value: Any) -> str:
    return "<nil>" if value is None else "uint64" if isinstance(value, int) and value > 0 else "*big.Int"


def _go_float_name(value: float) -> str:
    return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"
