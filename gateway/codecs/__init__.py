"""The codecs, one module each, and the registry handlers find them in by media type.

A handler negotiates (gateway.negotiation), looks the chosen media type up here, asks the core for
objects in the codec's core_encoding, and turns what comes back into a response body:

    output = negotiate_output(accept, protobuf=kind_has_schema)
    codec = codec_for(output.media_type)
    body = codec.encode(obj.data, api_version=..., kind=..., pretty=output.pretty or wants_pretty(...))

and the other way for request bodies: codec_for(input.media_type).decode(body) gives the bytes to
send the core (JSON, or the bare protobuf message with the envelope's apiVersion and kind).
Decoding raises one of DECODE_ERRORS, whose message is kube-apiserver's decoder error; the
handler wraps it as kube-apiserver does:

    f"the object provided is unrecognized (must be of type {kind}): {err.message} ({summarize(body)})"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol

from gateway.codecs import json, protobuf, yaml
from gateway.negotiation import JSON, PROTOBUF, YAML, CodecName, PatchType

CoreEncoding = Literal["json", "protobuf"]


@dataclass(frozen=True)
class Decoded:
    """A request body made ready for the core: data in the codec's core encoding, and for
    protobuf the envelope's apiVersion and kind (JSON carries them inside data)."""

    data: bytes
    api_version: str = ""
    kind: str = ""


class _Encode(Protocol):
    def __call__(self, data: bytes, *, api_version: str, kind: str, pretty: bool = False) -> bytes: ...


class _EncodeWatchEvent(Protocol):
    def __call__(self, event_type: str, data: bytes, *, api_version: str, kind: str) -> bytes: ...


@dataclass(frozen=True)
class Codec:
    """One wire format. encode turns an object the core rendered in core_encoding into a response
    body; decode turns a request body into a Decoded; encode_watch_event frames one watch event
    (None: this format cannot stream, as YAML cannot)."""

    name: CodecName
    media_type: str
    core_encoding: CoreEncoding
    encode: _Encode
    decode: Callable[[bytes], Decoded]
    encode_watch_event: _EncodeWatchEvent | None


def _decode_protobuf(body: bytes) -> Decoded:
    raw, api_version, kind = protobuf.decode(body)
    return Decoded(raw, api_version, kind)


JSON_CODEC = Codec(
    CodecName.JSON, JSON, "json", json.encode, lambda body: Decoded(json.decode(body)), json.encode_watch_event
)
YAML_CODEC = Codec(CodecName.YAML, YAML, "json", yaml.encode, lambda body: Decoded(yaml.decode(body)), None)
PROTOBUF_CODEC = Codec(
    CodecName.PROTOBUF, PROTOBUF, "protobuf", protobuf.encode, _decode_protobuf, protobuf.encode_watch_event
)

# Keyed by media type, patch types included: a patch body is JSON, or YAML for server-side apply.
CODECS: Mapping[str, Codec] = MappingProxyType(
    {
        JSON: JSON_CODEC,
        YAML: YAML_CODEC,
        PROTOBUF: PROTOBUF_CODEC,
        PatchType.JSON_PATCH.value: JSON_CODEC,
        PatchType.MERGE_PATCH.value: JSON_CODEC,
        PatchType.STRATEGIC_MERGE_PATCH.value: JSON_CODEC,
        PatchType.APPLY_PATCH.value: YAML_CODEC,
    }
)

# What decode raises; each carries .message, kube-apiserver's words.
DECODE_ERRORS: tuple[type[protobuf.EnvelopeError], type[yaml.YAMLError]] = (protobuf.EnvelopeError, yaml.YAMLError)


def codec_for(media_type: str) -> Codec:
    """The codec of a negotiated media type (Output.media_type or Input.media_type)."""
    try:
        return CODECS[media_type]
    except KeyError:
        raise LookupError(f"no codec for media type {media_type!r}; negotiate first") from None


def summarize(body: bytes, max_length: int = 30) -> str:
    """kube-apiserver's summarizeData: how a decode error shows the body it could not read:
    JSON-looking text as is, anything else as hex, cut at 30 bytes with " ..."."""
    if not body:
        return "<empty>"
    cut = body[:max_length]
    text = cut.decode("utf-8", "replace") if body[:1] == b"{" else cut.hex()
    return text + " ..." if len(body) > max_length else text
