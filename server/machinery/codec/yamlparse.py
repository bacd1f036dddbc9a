"""The part of reading YAML that needs PyYAML, for server/machinery/codec/yamlread.py: a body's events composed
into yaml.v2's nodes, anchors resolved, and PyYAML's errors in yaml.v2's words. It loads with the first YAML body
(PyYAML is ~13 ms of a start that most servers never need).

Events come from libyaml (PyYAML's C parser) when present: yaml.v2 is a Go port of it, so error texts
match; the pure-Python parser stands in otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml
from yaml import events as ev

from server.machinery.codec.yamlread import TOO_DEEP
from server.machinery.codec.yamlresolve import YAMLError

try:
    from yaml._yaml import CParser as _Parser
except ImportError:  # PyYAML built without libyaml
    from yaml.loader import BaseLoader as _Parser  # type: ignore[assignment]

_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"  # libyaml's own bound (PyYAML >= 6.0.4): the same refusal


def compose(body: bytes) -> Node | None:
    """The body's one document as nodes (None for an empty body). Raises YAMLError, RecursionError."""
    parser = None
    try:
        parser = _Parser(body)  # the pure-Python reader checks the encoding at once
        events: Iterator[ev.Event] = iter(parser.get_event, None)
        next(events)  # StreamStart
        event = next(events)
        if isinstance(event, ev.StreamEndEvent):
            return None
        root = _Composer(events).document()
        event = next(events)
        while isinstance(event, ev.DocumentStartEvent):
            if not _Composer(events).document().is_empty:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise YAMLError(f"yaml: line {line}: the body holds more than one YAML document")
            event = next(events)
        return root
    except yaml.MarkedYAMLError as err:
        raise YAMLError(TOO_DEEP if err.problem == _LIBYAML_TOO_DEEP else _v2_message(err)) from None
    except yaml.reader.ReaderError as err:
        raise YAMLError(f"yaml: {err.reason}") from None
    finally:
        if parser is not None:
            parser.dispose()


class Node:
    __slots__ = ("alias", "children", "implicit", "kind", "line", "tag", "value")

    def __init__(self, kind: str, line: int, tag: str = "", value: str = "", implicit: bool = False) -> None:
        self.kind, self.line, self.tag, self.value, self.implicit = kind, line, tag, value, implicit
        self.children: list[Node] = []
        self.alias: Node | None = None

    @property
    def is_empty(self) -> bool:
        return self.kind == "scalar" and self.implicit and not self.tag and not self.value


class _Composer:
    """Events to nodes, with anchors resolved as yaml.v2's parser resolves them."""

    def __init__(self, events: Iterator[ev.Event]) -> None:
        self.events = events
        self.anchors: dict[str, Node] = {}

    def document(self) -> Node:
        node = self.node(next(self.events))
        next(self.events)  # DocumentEnd
        return node

    def node(self, event: ev.Event) -> Node:
        line = event.start_mark.line if event.start_mark is not None else 0  # 0-based, as yaml.v2's node.line
        if isinstance(event, ev.AliasEvent):
            target = self.anchors.get(event.anchor or "")
            if target is None:
                raise YAMLError(f"yaml: unknown anchor '{event.anchor}' referenced")
            node = Node("alias", line, value=event.anchor or "")
            node.alias = target
            return node
        if isinstance(event, ev.ScalarEvent):
            node = Node("scalar", line, event.tag or "", event.value, bool(event.implicit[0]))
        else:
            assert isinstance(event, ev.CollectionStartEvent)
            node = Node("mapping" if isinstance(event, ev.MappingStartEvent) else "sequence", line, event.tag or "")
        if event.anchor:
            self.anchors[event.anchor] = node
        if node.kind != "scalar":
            child = next(self.events)
            while not isinstance(child, ev.CollectionEndEvent):
                node.children.append(self.node(child))
                child = next(self.events)
        return node


def _v2_message(err: yaml.MarkedYAMLError) -> str:
    """yaml.v2's parser.fail(): the problem, after the problem's line (scanner errors count from
    1, parser errors from 0), or else the context's line, or no line at all when that is 0."""
    line = 0
    if err.problem_mark is not None and err.problem_mark.line:
        line = err.problem_mark.line + (1 if isinstance(err, yaml.scanner.ScannerError) else 0)
    elif err.context_mark is not None and err.context_mark.line:
        line = err.context_mark.line
    where = f"line {line}: " if line else ""
    problem = _V2_WORDING.get(err.problem or "", err.problem) or "unknown problem parsing YAML content"
    return f"yaml: {where}{problem}"


# Where libyaml 0.2 reworded a message that yaml.v2, ported from libyaml 0.1, still prints the old way.
_V2_WORDING = {"found a tab character that violates indentation": "found a tab character that violate indentation"}
