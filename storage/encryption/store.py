"""Encryption at rest at the store boundary: a `Store` that encrypts values on their way to a backend and
decrypts them on their way back.

It wraps any backend (LMDB, etcd, memory) and is the store everything above `storage/` is given, so the
watch cache, the verbs, the garbage collector's whole-store watch and every reader see plaintext, and the
backend, its history, its files and etcd see only what the configuration's first provider wrote. Values go
through the chain of their key's resource (storage/encryption/state.py); the authenticated data of AES-GCM and
KMS v2 is the key as the backend stores it: on etcd the etcd key (`--etcd-prefix` + the store key), as
kube-apiserver authenticates its etcd key, on LMDB the store key.

Decrypting once: the plaintext of a (key, mod_revision) never changes, so the plaintexts of recent writes and
reads are kept (MEMO_ENTRIES, MEMO_BYTES): a write keeps the value it encrypted, and the watch events, gets
and lists that hand the same revision out again, to any number of watchers, cost a lookup, not a decryption.
Values of resources no entry encrypts pass through with kube's identity check only (a value starting with
`k8s:enc:` is not plaintext).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from storage import validate
from storage.encryption.ciphers import Chain, KeyPending, TransformError
from storage.encryption.state import Encryption
from storage.interface import Store, Watch
from storage.types import CountResult, Event, GetResult, KeyValue, ListResult, WriteResult

MEMO_ENTRIES = 8192
MEMO_BYTES = 64 << 20


class EncryptedStore:
    """`inner` with every value through `encryption`; `context_root` prefixes the key for authenticated data."""

    def __init__(self, inner: Store, encryption: Encryption, context_root: bytes = b"") -> None:
        self.inner = inner
        self.encryption = encryption
        self._root = context_root
        self._memo: dict[tuple[bytes, int], bytes] = {}
        self._memo_bytes = 0
        self._generation = encryption.generation

    # --- values -------------------------------------------------------------------------------------------

    def _remember(self, key: bytes, revision: int, plain: bytes) -> None:
        memo = self._memo
        memo[(key, revision)] = plain
        self._memo_bytes += len(plain)
        while len(memo) > MEMO_ENTRIES or self._memo_bytes > MEMO_BYTES:
            oldest = next(iter(memo))
            self._memo_bytes -= len(memo.pop(oldest))

    def _chain(self, key: bytes) -> Chain:
        if self.encryption.generation != self._generation:  # a reload: what was decided before is not kept
            self._generation = self.encryption.generation
            self._memo.clear()
            self._memo_bytes = 0
        return self.encryption.chain(key)

    def _sealed(self, key: bytes, value: bytes) -> bytes:
        key, value = validate.check_key(key), validate.check_value(value)  # InvalidArgument before any cipher
        return self._chain(key).to_storage(value, self._root + key if self._root else key)

    def _open_now(self, kv: KeyValue) -> KeyValue:
        """kv with its plaintext; KeyPending when a key must be fetched first, TransformError when unreadable."""
        value = kv.value
        if not value:  # a DELETE event's kv, or an empty value: nothing to decrypt
            return kv
        key, revision = kv.key, kv.mod_revision
        plain = self._memo.get((key, revision))
        if plain is None:
            chain = self._chain(key)
            plain = chain.from_storage(value, self._root + key if self._root else key)
            if plain is value:
                return kv
            self._remember(key, revision, plain)
        return KeyValue(key, plain, kv.create_revision, revision, kv.version)

    async def _open(self, kv: KeyValue) -> KeyValue:
        while True:
            try:
                return self._open_now(kv)
            except KeyPending as pending:
                await pending.load()

    async def _open_opt(self, kv: KeyValue | None) -> KeyValue | None:
        return None if kv is None else await self._open(kv)

    async def _open_all(self, kvs: Sequence[KeyValue]) -> list[KeyValue]:
        out: list[KeyValue] = []
        open_now = self._open_now
        for kv in kvs:
            try:
                out.append(open_now(kv))
            except KeyPending:
                out.append(await self._open(kv))
        return out

    async def _result(self, result: WriteResult, key: bytes, plain: bytes | None) -> WriteResult:
        """The backend's answer with plaintexts: on OK, `plain` is the value just written."""
        current = result.current
        if current is not None:
            if result.ok and plain is not None:
                self._remember(key, current.mod_revision, plain)
                current = KeyValue(key, plain, current.create_revision, current.mod_revision, current.version)
            else:
                current = await self._open(current)
        prev = await self._open_opt(result.prev)
        return WriteResult(result.outcome, result.revision, current, prev)

    # --- Store ------------------------------------------------------------------------------------------

    async def create(self, key: bytes, value: bytes) -> WriteResult:
        return await self._result(await self.inner.create(key, self._sealed(key, value)), key, value)

    async def get(self, key: bytes, *, at_revision: int | None = None) -> GetResult:
        result = await self.inner.get(key, at_revision=at_revision)
        kv = result.kv
        if kv is None:
            return result
        try:
            opened = self._open_now(kv)
        except KeyPending:
            opened = await self._open(kv)
        return result if opened is kv else GetResult(result.revision, opened)

    def recent(self, key: bytes) -> KeyValue | None:
        kv = self.inner.recent(key)
        if kv is None:
            return None
        try:
            return self._open_now(kv)
        except (KeyPending, TransformError):  # only a hint: the caller reads the key instead
            return None

    async def list(self, prefix: bytes, *, at_revision: int | None = None, start_after: bytes | None = None,
                   limit: int | None = None, counted: bool = True, values: bool = True) -> ListResult:
        result = await self.inner.list(prefix, at_revision=at_revision, start_after=start_after, limit=limit,
                                       counted=counted, values=values)
        if not values:
            return result  # nothing sealed to open
        return ListResult(result.revision, await self._open_all(result.kvs), result.remaining)

    async def count(self, prefix: bytes, *, at_revision: int | None = None) -> CountResult:
        return await self.inner.count(prefix, at_revision=at_revision)

    async def update(self, key: bytes, value: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        result = await self.inner.update(key, self._sealed(key, value), expected_mod_revision=expected_mod_revision)
        return await self._result(result, key, value)

    async def delete(self, key: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        result = await self.inner.delete(key, expected_mod_revision=expected_mod_revision)
        return await self._result(result, key, None)

    def watch(self, prefix: bytes, *, from_revision: int) -> Watch:
        return _DecryptingWatch(self, self.inner.watch(prefix, from_revision=from_revision))

    async def compact(self, revision: int) -> int:
        return await self.inner.compact(revision)

    def current_revision(self) -> int:
        return self.inner.current_revision()

    def compacted_revision(self) -> int:
        return self.inner.compacted_revision()

    def size_bytes(self) -> int:
        return self.inner.size_bytes()

    def quota_bytes(self) -> int | None:
        return self.inner.quota_bytes()

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            await self.encryption.close()


class _DecryptingWatch:
    """The backend's watch with every event's values in plaintext."""

    def __init__(self, store: EncryptedStore, inner: Watch) -> None:
        self._store = store
        self._inner = inner

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        return await self._event(await self._inner.__anext__())

    async def _event(self, event: Event) -> Event:
        store = self._store
        return Event(event.type, await store._open(event.kv), await store._open_opt(event.prev))

    async def next_batch(self, within: float | None = None) -> Sequence[Event]:
        batch = await self._inner.next_batch(within)
        if not batch:
            return batch
        open_now = self._store._open_now
        out: list[Event] = []
        for event in batch:
            try:
                prev = event.prev
                out.append(Event(event.type, open_now(event.kv), None if prev is None else open_now(prev)))
            except KeyPending:
                out.append(await self._event(event))
        return out

    def close(self) -> None:
        self._inner.close()

    def progress(self) -> int:
        return self._inner.progress()
