"""YAML bodies, written and read as kube-apiserver does through sigs.k8s.io/yaml (v1.4, over yaml.v2).

Writing is JSONToYAML: the object's JSON read back as YAML 1.1 values and marshalled by yaml.v2.
So keys come out sorted (yaml.v2's "natural" order: letters by code point, non-letters before
letters, digit runs by value), two spaces per level with "- " level with its key, lines folded
at 80 columns, multi-line strings as ``|`` blocks, and a string that would read back as something
else double-quoted: ``"true"``, ``"8080"``, ``"2024-01-01T00:00:00Z"`` (a timestamp), ``"1:20"``,
``""``. Numbers print as Go prints them (1.0 as ``1``, 1e6 as ``1e+06``).

Reading is YAMLToJSON, done by the core's one YAML reader (server/machinery/codec/yamlread.py, which says what
it accepts and refuses) so that a body reads the same whichever door it came in by; this module only
hands it the bytes. The writer and the reader share yaml.v2's scalar resolution
(server/machinery/codec/yamlresolve.py), so what is written unquoted reads back as written.

The writing itself is gateway/codecs/yamlwrite.py, loaded with the first YAML answer (PyYAML is ~13 ms of a
start that most servers never need).
"""

from __future__ import annotations

from server.machinery.codec.yamlread import YAMLError, load, yaml_to_json
from server.machinery.codec.yamlresolve import go_format_float

__all__ = ["YAMLError", "decode", "encode", "go_format_float", "json_to_yaml", "load", "yaml_to_json"]


def encode(data: bytes, *, api_version: str = "", kind: str = "", pretty: bool = False) -> bytes:
    """The response body for an object the core rendered as JSON."""
    del api_version, kind, pretty  # YAML is always indented
    return json_to_yaml(data)


def decode(body: bytes) -> bytes:
    return yaml_to_json(body)


def json_to_yaml(data: bytes) -> bytes:
    """sigs.k8s.io/yaml.JSONToYAML."""
    from gateway.codecs import yamlwrite  # PyYAML's emitter loads with the first YAML answer

    return yamlwrite.json_to_yaml(data)
