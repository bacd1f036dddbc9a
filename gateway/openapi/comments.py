"""The comments of protos/capstan/api, as OpenAPI descriptions of messages and fields.

Generated *_pb2 modules carry no comments, so protos/generate.sh also writes
capstan/api/descriptors.binpb: a FileDescriptorSet of the API protos with source info
(`protoc --include_source_info`). A message's or field's leading comment becomes its description as
Kubernetes' openapi-gen makes one of a Go doc comment (`clean`).
Detached comments (followed by a blank line) and trailing comments are notes for maintainers, not
descriptions. Without the file the documents are still served, without descriptions.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources

from google.protobuf import descriptor_pb2

log = logging.getLogger(__name__)

DESCRIPTOR_SET = "descriptors.binpb"

# FileDescriptorProto / DescriptorProto field numbers, as SourceCodeInfo.Location.path uses them.
_MESSAGE_TYPE = 4
_NESTED_TYPE = 3
_FIELD = 2


@dataclass(frozen=True)
class Comments:
    messages: Mapping[str, str] = field(default_factory=dict)  # message full name -> description
    fields: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (message, field) -> description

    def message(self, name: str) -> str:
        return self.messages.get(name, "")

    def field(self, message: str, name: str) -> str:
        return self.fields.get((message, name), "")


def clean(comment: str) -> str:
    """A leading comment as a description, as Kubernetes' openapi-gen makes one of a Go doc comment: lines joined
    by spaces (" a\\n b\\n\\n c\\n" -> "a b\\n\\nc"), a blank line a paragraph break, an indented line (an
    example, a list item's continuation) kept as a line of its own with its indentation; generator markers
    ("+optional", "+listType=map") and one-line TODOs dropped, nothing after a "---" line kept."""
    chunks: list[str] = []

    def drop_last_character() -> None:  # the space after a line, or a newline before a break or indented line
        if chunks:
            last = chunks.pop()
            if len(last) > 1:
                chunks.append(last[:-1])

    for raw in comment.split("\n"):
        line = raw[1:] if raw.startswith(" ") else raw  # the space after "//", as Go's comment text drops it
        if line == "---":
            break
        line = line.rstrip(" ")
        leading = line.lstrip(" ")
        if not line:
            drop_last_character()
            chunks.append("\n\n")
        elif leading.startswith(("TODO", "+")):
            continue
        elif line.startswith((" ", "\t")):
            drop_last_character()
            chunks.append("\n" + line + "\n")
        else:
            chunks.append(line + " ")
    return "".join(chunks).strip("\n").replace('\\"', '"').strip(" ")


def from_descriptor_set(files: descriptor_pb2.FileDescriptorSet) -> Comments:
    messages: dict[str, str] = {}
    fields: dict[tuple[str, str], str] = {}
    for file in files.file:
        paths: dict[tuple[int, ...], tuple[str, str]] = {}  # location path -> (message, field or "")
        prefix = f"{file.package}." if file.package else ""
        _index(paths, file.message_type, (_MESSAGE_TYPE,), prefix)
        for location in file.source_code_info.location:
            target = paths.get(tuple(location.path))
            text = clean(location.leading_comments)
            if target is None or not text:
                continue
            message, name = target
            if name:
                fields[(message, name)] = text
            else:
                messages[message] = text
    return Comments(messages, fields)


def _index(paths: dict[tuple[int, ...], tuple[str, str]], types: Iterable[descriptor_pb2.DescriptorProto],
           at: tuple[int, ...], prefix: str) -> None:
    for i, message in enumerate(types):
        name = prefix + message.name
        path = (*at, i)
        paths[path] = (name, "")
        for j, fld in enumerate(message.field):
            paths[(*path, _FIELD, j)] = (name, fld.name)
        _index(paths, message.nested_type, (*path, _NESTED_TYPE), name + ".")


@functools.cache
def load() -> Comments:
    """The comments of the installed API protos (read once)."""
    try:
        data = resources.files("capstan.api").joinpath(DESCRIPTOR_SET).read_bytes()
    except OSError:
        log.warning("capstan/api/%s is missing: OpenAPI documents will have no descriptions", DESCRIPTOR_SET)
        return Comments()
    return from_descriptor_set(descriptor_pb2.FileDescriptorSet.FromString(data))
