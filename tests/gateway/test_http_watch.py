"""Watch over HTTP: chunked streams of JSON lines or protobuf frames, their URL forms, Table and
PartialObjectMetadata watches, ERROR events (410 after compaction), BOOKMARKs, timeouts and the end of a
watch when its client goes away."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import Any

import pytest

import gateway.handlers.watch
from capstan.api.core.v1 import core_pb2 as core_v1
from capstan.api.meta.v1 import meta_pb2
from gateway.codecs import protobuf as protobuf_codec
from server.startup import apienablement
from tests.gateway import kube
from tests.gateway.conftest import TIMEOUT, Server

# kube's WatchList feature gate on (off by default in 1.28): what a watch with initial events needs.
WATCH_LIST = apienablement.runtime_config([], apienablement.feature_gates(["WatchList=true"]))
GATED = "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"

Obj = dict[str, Any]
CM = "/api/v1/namespaces/default/configmaps"
JSON, PROTOBUF = "application/json", "application/vnd.kubernetes.protobuf"


def event(kind: str, obj: Obj) -> Obj:
    return {"type": kind, "object": obj}


@pytest.mark.parametrize("path", [
    f"{CM}?watch=true",
    f"{CM}?watch=1",
    f"{CM}?watch",
    "/api/v1/watch/namespaces/default/configmaps",  # the deprecated /watch/ path
])
async def test_json_watch_of_a_collection(server: Server, path: str) -> None:
    a = await server.create(CM, {"metadata": {"name": "a"}})
    await server.create("/api/v1/namespaces/kube-system/configmaps", {"metadata": {"name": "elsewhere"}})
    query = "&" if "?" in path else "?"
    async with server.watch(f"{path}{query}timeoutSeconds=5") as stream:
        assert (stream.status, stream.headers["Content-Type"], stream.headers["Transfer-Encoding"]) == (
            200, JSON, "chunked")
        assert await stream.lines(1) == [event("ADDED", a)]  # the current state first (no resourceVersion)
        b = await server.create(CM, {"metadata": {"name": "b"}})
        changed = (await server.request("PUT", f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "v"}})).json()
        await server.request("DELETE", f"{CM}/b")
        deleted = {**b, "metadata": {**b["metadata"], "resourceVersion": str(server.revision())}}
        assert await stream.lines(3) == [event("ADDED", b), event("MODIFIED", changed), event("DELETED", deleted)]


async def test_watch_lines_are_compact_json_one_per_event(server: Server) -> None:
    await server.create(CM, {"metadata": {"name": "a"}})
    await server.create(CM, {"metadata": {"name": "b"}})
    async with server.watch(f"{CM}?watch=1&timeoutSeconds=5&pretty=true") as stream:
        await stream.lines(2)
        raw = stream.consumed
    lines = raw.split(b"\n")
    assert len(lines) == 3 and lines[2] == b""  # each event ends in a newline; no pretty printing in watches
    assert all(line.startswith(b'{"type":"ADDED","object":{"kind":"ConfigMap"') for line in lines[:2])


@pytest.mark.parametrize("path", [
    f"{CM}?watch=1&fieldSelector=metadata.name%3Da",
    f"{CM}?watch=true&fieldSelector=metadata.name%3D%3Da",
    "/api/v1/watch/namespaces/default/configmaps/a",
    "/api/v1/watch/namespaces/default/configmaps/a?fieldSelector=metadata.name%3Da",
])
async def test_watch_of_one_object(server: Server, path: str) -> None:
    a = await server.create(CM, {"metadata": {"name": "a"}})
    await server.create(CM, {"metadata": {"name": "b"}})
    query = "&" if "?" in path else "?"
    async with server.watch(f"{path}{query}timeoutSeconds=5") as stream:
        assert await stream.lines(1) == [event("ADDED", a)]
        await server.request("PUT", f"{CM}/b", json={"metadata": {"name": "b"}, "data": {"x": "y"}})
        changed = (await server.request("PUT", f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "v"}})).json()
        assert await stream.lines(1) == [event("MODIFIED", changed)]  # b's change never shows


async def test_watch_of_one_object_with_another_name_selected_is_400(server: Server) -> None:
    resp = await server.request("GET", "/api/v1/watch/namespaces/default/configmaps/a?fieldSelector=metadata.name%3Db")
    assert (resp.status, resp.json()) == (400, kube.bad_request(
        "fieldSelector metadata.name doesn't match requested name"))


@pytest.mark.parametrize(("path", "names"), [
    ("/api/v1/configmaps?watch=1", [("default", "a"), ("kube-system", "b")]),
    ("/api/v1/watch/configmaps", [("default", "a"), ("kube-system", "b")]),
    ("/api/v1/namespaces?watch=1&labelSelector=kubernetes.io%2Fmetadata.name%3Dkube-public", [("", "kube-public")]),
])
async def test_watch_across_namespaces_and_cluster_scoped(
    server: Server, path: str, names: list[tuple[str, str]]
) -> None:
    await server.create(CM, {"metadata": {"name": "a"}})
    await server.create("/api/v1/namespaces/kube-system/configmaps", {"metadata": {"name": "b"}})
    async with server.watch(f"{path}&timeoutSeconds=5" if "?" in path else f"{path}?timeoutSeconds=5") as stream:
        events = await stream.lines(len(names))
    assert [(e["type"], e["object"]["metadata"].get("namespace", ""), e["object"]["metadata"]["name"])
            for e in events] == [("ADDED", ns, name) for ns, name in names]


async def test_protobuf_watch_frames(server: Server) -> None:
    a = await server.create(CM, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    async with server.watch(f"{CM}?watch=1&timeoutSeconds=5", headers={"Accept": PROTOBUF}) as stream:
        assert (stream.status, stream.headers["Content-Type"]) == (200, f"{PROTOBUF};stream=watch")
        first = await stream.frames(1)
        await server.request("DELETE", f"{CM}/a")
        second = await stream.frames(1)
    decoded = []
    for frame in first + second:
        watch_event = meta_pb2.WatchEvent.FromString(frame)
        # The event's object is a whole envelope (magic, TypeMeta, raw), as kube-apiserver frames it.
        api_version, kind, raw = protobuf_codec.decode_envelope(watch_event.object.raw)
        message = core_v1.ConfigMap.FromString(raw)
        decoded.append((watch_event.type, api_version, kind, message.metadata.name, message.metadata.uid,
                        message.metadata.resourceVersion, dict(message.data)))
    uid = a["metadata"]["uid"]
    assert decoded == [("ADDED", "v1", "ConfigMap", "a", uid, a["metadata"]["resourceVersion"], {"k": "v"}),
                       ("DELETED", "v1", "ConfigMap", "a", uid, str(server.revision()), {"k": "v"})]


async def test_table_watch_sends_one_row_tables(server: Server) -> None:
    await server.create(CM, {"metadata": {"name": "a"}})
    await server.create(CM, {"metadata": {"name": "b"}, "data": {"k": "v"}})
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with server.watch(f"{CM}?watch=1&timeoutSeconds=5&includeObject=None", headers=headers) as stream:
        assert (stream.status, stream.headers["Content-Type"]) == (200, JSON)
        events = await stream.lines(2)
        await server.request("DELETE", f"{CM}/a")
        events += await stream.lines(1)
    tables = [e["object"] for e in events]
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "DELETED"]
    assert {(t["kind"], t["apiVersion"]) for t in tables} == {("Table", "meta.k8s.io/v1")}
    assert [len(t["rows"]) for t in tables] == [1, 1, 1]
    assert [[c["name"] for c in t["columnDefinitions"] or []] for t in tables] == [["Name", "Data", "Age"], [], []]
    assert [t["rows"][0]["cells"][:2] for t in tables] == [["a", 0], ["b", 1], ["a", 0]]
    assert [t["metadata"]["resourceVersion"] for t in tables][2] == str(server.revision())


@pytest.mark.parametrize("accept", [
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
])
async def test_partial_object_metadata_watch(server: Server, accept: str) -> None:
    a = await server.create(CM, {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}})
    async with server.watch(f"{CM}?watch=1&timeoutSeconds=5", headers={"Accept": accept}) as stream:
        content_type = stream.headers["Content-Type"]
        if accept.startswith(PROTOBUF):
            (frame,) = await stream.frames(1)
        else:
            lines = await stream.lines(1)
    if accept.startswith(PROTOBUF):
        assert content_type == f"{PROTOBUF};stream=watch"
        watch_event = meta_pb2.WatchEvent.FromString(frame)
        api_version, kind, raw = protobuf_codec.decode_envelope(watch_event.object.raw)
        partial = meta_pb2.PartialObjectMetadata.FromString(raw)
        assert (watch_event.type, api_version, kind, partial.metadata.name, partial.metadata.uid,
                dict(partial.metadata.labels)) == (
            "ADDED", "meta.k8s.io/v1", "PartialObjectMetadata", "a", a["metadata"]["uid"], {"x": "1"})
    else:
        assert content_type == JSON
        assert lines == [event("ADDED", {
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]})]


async def compacted_past(server: Server) -> int:
    """A resourceVersion that compaction has removed: the revision before two writes, compacted past."""
    old = server.revision()
    await server.create(CM, {"metadata": {"name": "a"}})
    await server.request("PUT", f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    await server.core.core.context.store.compact(server.revision())
    return old


async def test_watch_from_a_compacted_revision_is_an_error_event(server: Server) -> None:
    old = await compacted_past(server)
    async with server.watch(f"{CM}?watch=1&resourceVersion={old}&timeoutSeconds=5") as stream:
        assert stream.status == 200
        assert await stream.lines(1) == [event("ERROR", {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {old} ({server.revision()})", "reason": "Expired", "code": 410})]
        assert await stream.end() == b""

    async with server.watch(f"{CM}?watch=1&resourceVersion={old}", headers={"Accept": PROTOBUF}) as stream:
        (frame,) = await stream.frames(1)
        assert await stream.end() == b""
    watch_event = meta_pb2.WatchEvent.FromString(frame)
    api_version, kind, raw = protobuf_codec.decode_envelope(watch_event.object.raw)
    status = meta_pb2.Status.FromString(raw)
    assert (watch_event.type, api_version, kind, status.status, status.reason, status.code) == (
        "ERROR", "v1", "Status", "Failure", "Expired", 410)


@pytest.mark.parametrize("enablement", [WATCH_LIST], ids=["WatchList"])
async def test_bookmarks(server: Server) -> None:
    """allowWatchBookmarks with sendInitialEvents: the current state, then a BOOKMARK at its revision
    annotated k8s.io/initial-events-end (a BOOKMARK's object is the kind with only a resourceVersion)."""
    a = await server.create(CM, {"metadata": {"name": "a"}})
    revision = server.revision()
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    async with server.watch(f"{CM}?{query}&timeoutSeconds=5") as stream:
        assert await stream.lines(2) == [event("ADDED", a), event("BOOKMARK", {
            "kind": "ConfigMap", "apiVersion": "v1", "metadata": {
                "resourceVersion": str(revision), "annotations": {"k8s.io/initial-events-end": "true"},
                "creationTimestamp": None}})]
    async with server.watch(f"{CM}?{query}&timeoutSeconds=5", headers={"Accept": PROTOBUF}) as stream:
        frames = await stream.frames(2)
    bookmark = meta_pb2.WatchEvent.FromString(frames[1])
    api_version, kind, raw = protobuf_codec.decode_envelope(bookmark.object.raw)
    empty = core_v1.ConfigMap.FromString(raw)
    assert (bookmark.type, api_version, kind, empty.metadata.resourceVersion, dict(empty.metadata.annotations),
            empty.metadata.name) == ("BOOKMARK", "v1", "ConfigMap", str(revision),
                                     {"k8s.io/initial-events-end": "true"}, "")
    without = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    async with server.watch(f"{CM}?{without}&timeoutSeconds=1") as stream:
        lines = await stream.lines(2)
        assert [line["type"] for line in lines] == ["ADDED", "BOOKMARK"]  # sendInitialEvents asks for it anyway


async def test_timeout_seconds_ends_the_stream(server: Server) -> None:
    started = time.monotonic()
    async with server.watch(f"{CM}?watch=1&timeoutSeconds=2&timeout=bogus") as stream:
        # The headers go out before any event (a client's Watch() returns at once), and ?timeout is
        # not checked on a watch (kube-apiserver's WithRequestDeadline skips long-running requests).
        headers = time.monotonic()
        assert stream.status == 200
        assert await stream.end() == b""
    ended = time.monotonic()
    assert ended - headers > 1.0  # the stream stayed open after its headers for most of its timeout
    assert 1.9 < ended - started < 6


async def test_client_disconnect_frees_the_core_watch(server: Server) -> None:
    broadcaster = server.core.core.context.store._broadcaster  # type: ignore[attr-defined]
    baseline = broadcaster.subscriber_count

    async def subscribers(expected: int) -> None:
        while broadcaster.subscriber_count != expected:
            await asyncio.sleep(0.01)

    async with server.watch(f"{CM}?watch=1") as stream:
        assert stream.status == 200
        await asyncio.wait_for(subscribers(baseline + 1), TIMEOUT)
        stream.response.close()  # drop the connection mid-stream
    await asyncio.wait_for(subscribers(baseline), TIMEOUT)


@pytest.mark.parametrize(("query", "code", "expected"), [
    ("resourceVersion=abc", 400, kube.bad_request(
        'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax')),
    ("resourceVersionMatch=Exact&resourceVersion=1", 422, kube.status(422, "Invalid", (
        'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is '
        "forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: "
        '"Exact": supported values: "NotOlderThan"]'), {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
            {"reason": "FieldValueForbidden", "field": "resourceVersionMatch", "message": (
                "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")},
            {"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
             "message": 'Unsupported value: "Exact": supported values: "NotOlderThan"'}]})),
    ("labelSelector=a%3D%3D%3D", 400, kube.bad_request("unable to parse requirement: found '=', expected: identifier")),
    ("timeoutSeconds=soon", 400, kube.bad_request('strconv.ParseInt: parsing "soon": invalid syntax')),
    # kube 1.28's default gates: WatchList is off
    ("sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 422, kube.status(
        422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: {GATED}',
        {"group": "meta.k8s.io", "kind": "ListOptions",
         "causes": [{"reason": "FieldValueForbidden", "field": "sendInitialEvents", "message": GATED}]})),
])
async def test_refused_watches_answer_a_plain_status(server: Server, query: str, code: int, expected: Obj) -> None:
    resp = await server.request("GET", f"{CM}?watch=1&{query}")
    assert (resp.status, resp.content_type, resp.json()) == (code, JSON, expected)


@pytest.mark.parametrize("enablement", [WATCH_LIST], ids=["WatchList"])
async def test_watch_from_a_future_revision_waits_for_the_changes_after_it(server: Server) -> None:
    """kube-apiserver 1.28's watch cache starts a watch from a revision it has not reached at once, with no error,
    and sends the changes after that revision (beside it: an empty stream until timeoutSeconds)."""
    future = server.revision() + 100
    async with server.watch(f"{CM}?watch=1&resourceVersion={future}&timeoutSeconds=1") as stream:
        assert stream.status == 200
        assert await stream.end() == b""
    # With initial events the cacher waits for the revision, and gives up with its 504 in the stream.
    query = f"watch=1&resourceVersion={future}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    async with server.watch(f"{CM}?{query}&allowWatchBookmarks=true") as stream:
        assert stream.status == 200
        assert await stream.lines(1) == [event("ERROR", kube.status(
            504, "Timeout", f"Timeout: Too large resource version: {future}, current: {server.revision()}",
            {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
             "retryAfterSeconds": 1}))]
        assert await stream.end() == b""


async def test_yaml_cannot_stream(server: Server) -> None:
    resp = await server.request("GET", f"{CM}?watch=1", headers={"Accept": "application/yaml"})
    assert (resp.status, resp.json()) == (406, kube.status(406, "NotAcceptable", kube.NOT_STREAMABLE))


async def test_a_watcher_that_never_reads_is_dropped_without_an_error_event(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that stops reading holds the transport's buffer, not the collection: once a write has waited
    WRITE_TIMEOUT the connection is dropped and the core's watch with it, and the stream ends without an
    ERROR event (kube-apiserver's unresponsive watcher); the writers never wait for it."""
    monkeypatch.setattr(gateway.handlers.watch, "WRITE_TIMEOUT", 0.3)
    broadcaster = server.core.core.context.store._broadcaster  # type: ignore[attr-defined]
    baseline = broadcaster.subscriber_count
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server's writes wait soon
    host, port = server.url.removeprefix("http://").split(":")
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    writer.write(f"GET {CM}?watch=1 HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    assert head.startswith(b"HTTP/1.1 200 ")
    payload = "x" * 65_536
    dropped_after = None
    for i in range(300):  # ~19 MiB at most: far past the socket buffers
        created = await asyncio.wait_for(server.create(CM, {"metadata": {"name": f"c{i}"}, "data": {"k": payload}}),
                                         TIMEOUT)
        assert created["metadata"]["name"] == f"c{i}"
        if broadcaster.subscriber_count == baseline:
            dropped_after = i
            break
        await asyncio.sleep(0.02)
    assert dropped_after is not None, "the watch was never dropped"
    rest = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := await asyncio.wait_for(reader.read(1 << 20), TIMEOUT):
            rest += chunk
    writer.close()
    assert b'"ERROR"' not in rest
    assert b'"ADDED"' in rest  # what the buffers held before the drop
