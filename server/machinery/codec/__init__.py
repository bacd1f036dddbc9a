"""Kubernetes JSON <-> protobuf, for every Kubernetes-compatible message, driven by descriptors.

    decode(ConfigMap, body)   -> DecodeResult(message, unknown field paths), or DecodeError
    encode(message)           -> the dict kube-apiserver would print
    encode_json_bytes(message) -> the same, as compact JSON bytes

The conventions and the error contract are in server/machinery/codec/transcode.py.
"""

from server.machinery.codec.errors import DecodeError, EncodeError
from server.machinery.codec.transcode import DecodeResult, decode, encode, encode_json_bytes

__all__ = ["DecodeError", "DecodeResult", "EncodeError", "decode", "encode", "encode_json_bytes"]
