"""The comments of protos/capstan/api, as OpenAPI descriptions of messages and fields.

Generated *_pb2 modules carry no comments, so protos/generate.sh also writes
capstan/api/descriptors.binpb: a FileDescriptorSet of the API protos with source info
(`protoc --include_source_info`). A message's or field's leading comment becomes its description:
lines joined by spaces, blank lines kept as paragraph breaks, as Kubernetes' openapi-gen does.
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
    """A leading comment as a description: " a\\n b\\n\\n c\\n" -> "a b\\n\\nc". As openapi-gen does with
    Go doc comments, generator markers ("+optional", "+listType=map") and one-line TODOs are dropped, and
    nothing after a "---" line is kept."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in comment.splitlines():
        text = line.strip()
        if text == "---":
            break
        if text.startswith(("+", "TODO")):
            continue
        if text:
            current.append(text)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


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
