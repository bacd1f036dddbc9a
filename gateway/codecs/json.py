"""JSON bodies: the core already renders Kubernetes JSON, so this codec mostly passes bytes through.

What it adds is kube-apiserver's presentation:
- ``pretty``: json.MarshalIndent(obj, "", "  "), i.e. Go's json.Indent over compact JSON, with no
  trailing newline. It re-indents the text rather than re-encoding values, so strings keep Go's
  escapes (``\\u003c``, ``\\u0026``) and numbers keep their spelling.
- watch events: one ``{"type":"ADDED","object":{...}}`` per line, each ending in a newline (the
  JSON framer writes encoder output back to back, and encoding/json ends each with "\\n").

Request bodies pass through untouched: the core decodes them and words errors as Go does.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# A JSON string (with its escapes), one punctuation byte, or a run of anything else (a number,
# true, false, null); whitespace between tokens is dropped, as json.Indent drops it.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]|[^{}\[\],:"\s]+')
_OPEN, _CLOSE = frozenset(b"{["), frozenset(b"}]")
_COMMA, _COLON = ord(","), ord(":")


def encode(data: bytes, *, api_version: str = "", kind: str = "", pretty: bool = False) -> bytes:
    """The response body for an object the core rendered as JSON."""
    del api_version, kind  # JSON objects carry their own
    # Go's Encoder.Encode ends a compact document with a newline; MarshalIndent's pretty form has none.
    return indent(data) if pretty else data + b"\n"


def decode(body: bytes) -> bytes:
    return body


def indent(data: bytes) -> bytes:
    """Go's json.Indent(dst, data, "", "  "): a newline and two spaces per level after each opening
    bracket and comma, ": " after keys, and ``{}``/``[]`` left empty on one line."""
    out: list[bytes] = []
    depth, pending = 0, False  # pending: a bracket just opened, its newline not yet written
    for match in _TOKEN.finditer(data):
        token = match.group()
        first = token[0]
        if pending and first not in _CLOSE:
            pending = False
            depth += 1
            out.append(b"\n" + b"  " * depth)
        if first in _OPEN:
            pending = True
            out.append(token)
        elif first == _COMMA:
            out.append(b",\n" + b"  " * depth)
        elif first == _COLON:
            out.append(b": ")
        elif first in _CLOSE:
            if pending:
                pending = False
            else:
                depth -= 1
                out.append(b"\n" + b"  " * depth)
            out.append(token)
        else:
            out.append(token)
    return b"".join(out)


def encode_watch_event(event_type: str, data: bytes, *, api_version: str = "", kind: str = "") -> bytes:
    """One line of a JSON watch stream; data is the object's compact JSON."""
    del api_version, kind
    return b'{"type":' + orjson.dumps(event_type) + b',"object":' + data.strip() + b"}\n"


def decode_watch_events(stream: bytes) -> list[tuple[str, Any]]:
    """(type, object) of each line of a JSON watch stream; a client's reading, for tests."""
    events = [orjson.loads(line) for line in stream.splitlines() if line.strip()]
    return [(event["type"], event["object"]) for event in events]
