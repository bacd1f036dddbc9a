"""The one etcd watch a store holds on its whole prefix, fanned out in-process.

Every change under the prefix, made by this process or any other, arrives here once and is
published to the store's Broadcaster, so any number of store watches cost one etcd watch (as
kube-apiserver's cacher holds one etcd watch per resource). It also keeps a window of the
recent events, which is the history a new store watch replays from (storage/watch.py's
ReplayingWatch reads it synchronously): the window holds every event with a revision greater
than `floor`, starting at the revision the store opened at and bounded by
`EtcdConfig.window_events`. A watch from before the window is answered as the cacher answers
one: Compacted ("too old resource version"), so its client re-lists.

`latest` indexes the window by key: each key's newest event in it, as a KeyValue (None for a deletion is
not kept), which is EtcdStore.recent()'s memory; the store also records its own writes there as they are
acknowledged, since its watch event may come a moment later.

`clock` is how far the feed has delivered: every change up to clock.revision has been
published. It rises with each batch of events and with etcd's progress responses that come only
once the watch has caught up with the store; that is what store watches report as their progress
(BOOKMARKs) and where a new store watch's replay hands over to live events. etcd's timed progress
notifications (this watch's id) always come so; a requested one (watch id -1, asked for every
`progress_interval`) does only from etcd 3.4.25 and 3.5.8 on (etcd-io/etcd#15220): before, etcd
answers it at once with its current revision, ahead of events still queued for the stream, and a
clock moved by it would let a replay skip those events and a reconnect resume after them. So a
requested progress moves the clock only when the member said it is such a version
(`ordered_progress`, from Maintenance.Status); otherwise it only tells the store's current
revision, and the clock follows events and timed notifications, as kube-apiserver's watch cache
does on such an etcd. If the etcd watch breaks (the cluster is unreachable), the feed
reconnects from the next revision it has not delivered, so no event is lost or repeated; if
that revision has been compacted meanwhile, every store watch fails with Compacted and the
window restarts at the compacted revision.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import re
from collections import deque
from collections.abc import Callable

import grpc
import grpc.aio

from storage.broadcast import Broadcaster, Subscriber
from storage.clock import RevisionClock
from storage.errors import Compacted
from storage.etcd.config import EtcdConfig
from storage.etcd.keys import range_end
from storage.etcd.pb.etcdserverpb import rpc_pb2, rpc_pb2_grpc
from storage.etcd.pb.mvccpb import kv_pb2
from storage.tasks import cancel
from storage.types import Event, EventType, KeyValue
from storage.watch import HistoryPage

log = logging.getLogger(__name__)

RETRY = 0.2  # seconds between attempts to re-open the etcd watch
REQUESTED = -1  # the watch id of a progress response that answers a WatchProgressRequest (clientv3.InvalidWatchID)


def to_kv(root: bytes, kv: kv_pb2.KeyValue) -> KeyValue:
    return KeyValue(kv.key[len(root):], kv.value, kv.create_revision, kv.mod_revision, kv.version)


def to_event(root: bytes, event: kv_pb2.Event) -> Event:
    prev = to_kv(root, event.prev_kv) if event.HasField("prev_kv") else None
    if event.type == kv_pb2.Event.PUT:
        return Event(EventType.PUT, to_kv(root, event.kv), prev)
    # etcd's tombstone has no create_revision or version; the store's carries the deleted key's.
    key = event.kv.key[len(root):]
    create, version = (prev.create_revision, prev.version) if prev is not None else (0, 0)
    return Event(EventType.DELETE, KeyValue(key, b"", create, event.kv.mod_revision, version), prev)


class Feed:
    def __init__(
        self,
        stub: rpc_pb2_grpc.WatchStub,
        config: EtcdConfig,
        *,
        start: int,
        broadcaster: Broadcaster,
        observe: Callable[[int], None],
    ) -> None:
        self._stub = stub
        self._config = config
        self._root = config.root
        self._broadcaster = broadcaster
        self._observe = observe  # told every revision etcd reports, for current_revision()
        self.clock = RevisionClock(start)
        self.floor = start  # the window holds every event with a revision > floor
        self.compacted = 0  # the store's compacted revision as forget_before last heard it
        self._window: deque[Event] = deque()
        self.latest: dict[bytes, KeyValue] = {}  # each key's newest value in the window (or written since)
        self._task: asyncio.Task[None] | None = None
        self._subscribers: set[Subscriber] = set()  # the live ones, to fail when etcd compacts past the feed
        self.connected = False
        # Whether a requested progress response comes after every event before its revision (etcd >= 3.4.25,
        # 3.5.8): the store sets it from the member's version; until then it is not trusted.
        self.ordered_progress = False

    def subscribe(self, prefix: bytes) -> Subscriber:
        self._subscribers = {s for s in self._subscribers if not s.closed}
        sub = self._broadcaster.subscribe(prefix)
        self._subscribers.add(sub)
        return sub

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="capstan-etcd-feed")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel(task)
        self.clock.close()

    # -- the window, as ReplayingWatch's HistorySource ---------------------------

    def read_history(self, prefix: bytes, after: int, limit: int) -> HistoryPage:
        if after < self.compacted:  # what a read below it answers, whether or not the feed has caught up
            raise Compacted(after, self.compacted)
        if after < self.floor:
            raise Compacted(after, self.floor)
        window = self._window
        start = bisect.bisect_right(window, after, key=lambda e: e.revision)
        events: list[Event] = []
        for i in range(start, len(window)):
            event = window[i]
            if event.kv.key.startswith(prefix):
                events.append(event)
                if len(events) == limit:
                    return HistoryPage(events, event.revision, event.revision >= self.clock.revision)
        return HistoryPage(events, self.clock.revision, True)

    def forget_before(self, revision: int) -> None:
        """Compaction to `revision`: watches from before it are Compacted, as reads are."""
        while self._window and self._window[0].revision <= revision:
            self._forget(self._window.popleft())
        self.floor = max(self.floor, min(revision, self.clock.revision))
        self.compacted = max(self.compacted, revision)

    # -- the etcd watch ------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except grpc.aio.AioRpcError as err:
                if self.connected:
                    log.warning("etcd watch broke (%s); resuming after %d", err.code().name, self.clock.revision)
            except Exception:  # a bug of ours must not end the feed silently
                log.exception("etcd watch failed; resuming after %d", self.clock.revision)
            self.connected = False
            await asyncio.sleep(RETRY)

    async def _follow(self) -> None:
        call = self._stub.Watch()
        ticker: asyncio.Task[None] | None = None
        try:
            create = rpc_pb2.WatchCreateRequest(
                key=self._root,
                range_end=range_end(self._root),
                start_revision=self.clock.revision + 1,
                progress_notify=True,
                prev_kv=True,
            )
            await call.write(rpc_pb2.WatchRequest(create_request=create))
            ticker = asyncio.get_running_loop().create_task(self._tick(call))
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    return
                assert isinstance(response, rpc_pb2.WatchResponse)
                self.connected = True
                self._handle(response)
                if response.canceled:
                    return
        finally:
            if ticker is not None:
                ticker.cancel()
            call.cancel()

    async def _tick(self, call: grpc.aio.StreamStreamCall[rpc_pb2.WatchRequest, rpc_pb2.WatchResponse]) -> None:
        progress = rpc_pb2.WatchRequest(progress_request=rpc_pb2.WatchProgressRequest())
        while True:
            await asyncio.sleep(self._config.progress_interval)
            await call.write(progress)

    def _handle(self, response: rpc_pb2.WatchResponse) -> None:
        if response.compact_revision:
            self._restart_at(response.compact_revision)
            return
        if response.events:
            batch = [to_event(self._root, e) for e in response.events]
            self._window.extend(batch)
            for event in batch:
                self.remember(event.kv if event.type is EventType.PUT else None, event.kv.key, event.revision)
            while len(self._window) > self._config.window_events:
                oldest = self._window.popleft()
                self._forget(oldest)
                self.floor = oldest.revision
            self._broadcaster.publish(batch)
            self.clock.advance(batch[-1].revision)
            self._observe(batch[-1].revision)
        elif not response.created and not response.canceled:
            # A progress response: the store's revision; how far the watch has delivered when it is timed, or
            # requested of an etcd that orders it after the stream's events.
            if response.watch_id != REQUESTED or self.ordered_progress:
                self.clock.advance(response.header.revision)
            self._observe(response.header.revision)

    def remember(self, kv: KeyValue | None, key: bytes, revision: int) -> None:
        """The key changed at `revision` (kv None: deleted), unless `latest` already holds a later change."""
        known = self.latest.get(key)
        if known is not None and known.mod_revision >= revision:
            return
        if kv is None:
            self.latest.pop(key, None)
        else:
            self.latest[key] = kv

    def _forget(self, event: Event) -> None:
        """`event` left the window: its key is forgotten unless it changed again since."""
        known = self.latest.get(event.kv.key)
        if known is not None and known.mod_revision <= event.revision:
            del self.latest[event.kv.key]

    def _restart_at(self, compact_revision: int) -> None:
        """The next revision to deliver was compacted: what lies between is lost to every watcher."""
        log.warning("etcd compacted past the watch (%d < %d); watchers re-list", self.clock.revision, compact_revision)
        resumed = compact_revision - 1
        error = Compacted(self.clock.revision, compact_revision)
        for sub in list(self._subscribers):
            sub.fail(error)
        self._window.clear()
        self.latest.clear()
        self.floor = resumed
        self.clock.advance(resumed)


def progress_in_order(version: str) -> bool:
    """Whether etcd `version` answers a WatchProgressRequest only once the stream has delivered every event up to
    the revision it reports (etcd-io/etcd#15237: 3.4.25, 3.5.8 and later)."""
    numbers = tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    if len(numbers) < 3:
        return False
    if numbers >= (3, 6, 0):
        return True
    if numbers[:2] == (3, 5):
        return numbers >= (3, 5, 8)
    return numbers[:2] == (3, 4) and numbers >= (3, 4, 25)
