"""The KMS v2 provider: envelope encryption with a DEK that a KMS plugin encrypts, as kube-apiserver 1.28 does.

The plugin is a gRPC server on a unix socket speaking kube's KMS v2 API (protos/storage/encryption/pb/v2/kms.proto:
Status, Encrypt, Decrypt). As kube 1.28 does with KMSv2KDF off (its default):

- one DEK (a random 32-byte AES-GCM key) per process and plugin key ID: made at start and again whenever
  Status reports another key_id, or when the last good Status is older than WRITE_DEK_TTL; the plugin
  encrypts it once (Encrypt), not once per write;
- a write is AES-GCM under that DEK with a 12-byte nonce of 4 random bytes and a little-endian 64-bit counter
  starting past 10^9 (kube's NewGCMTransformerWithUniqueKeyUnsafe), the storage key as authenticated data;
  the stored value is `k8s:enc:kms:v2:<name>:` + the EncryptedObject protobuf (encryptedData, keyID,
  encryptedDEKSource, annotations, encryptedDEKSourceType AES_GCM_KEY);
- a read looks the EncryptedObject's DEK up among those already decrypted (by type, encrypted DEK, key ID and
  annotations), else asks the plugin to Decrypt it once and keeps it; values whose DEK source is an HKDF seed
  (HKDF_SHA256_XNONCE_AES_GCM_SEED, what kube 1.29 writes) are read too;
- calls wait for the plugin's socket within the provider's timeout (kube's WaitForReady), so a plugin that
  restarts is used again as soon as it listens;
- Status is polled every minute while healthy and every 10 s otherwise; writes fail once no good Status came
  for WRITE_DEK_TTL (3 minutes), so a plugin that went away cannot keep encrypting under a stale key for long.

The health check (`probe`) answers from the last Status for 20 s when it passed and 3 s when it failed,
kube's kmsv2PluginProbe TTLs, and says what was wrong in kube's words.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import time
import uuid
from collections.abc import Callable

import grpc
import grpc.aio
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand
from google.protobuf.message import DecodeError

from storage.encryption.ciphers import AesGcm, KeyPending, Transformer, TransformError
from storage.encryption.config import KmsConfig
from storage.encryption.pb.v2 import envelope_pb2, kms_pb2, kms_pb2_grpc
from storage.tasks import cancel

log = logging.getLogger(__name__)

VERSIONS = ("v2", "v2beta1")
POSITIVE_INTERVAL = 60.0  # kube's kmsv2PluginHealthzPositiveInterval
NEGATIVE_INTERVAL = 10.0  # kmsv2PluginHealthzNegativeInterval
WRITE_DEK_TTL = 180.0  # kmsv2PluginWriteDEKSourceMaxTTL
PROBE_POSITIVE_TTL = 20.0  # kmsPluginHealthzPositiveTTL
PROBE_NEGATIVE_TTL = 3.0  # kmsPluginHealthzNegativeTTL
MAX_KEY_ID = 1024
MAX_DEK_SOURCE = 1024
MAX_ANNOTATIONS = 32 * 1024
SEED_INFO = 32  # an HKDF-seeded value's info bytes before its nonce
COUNTER_ZERO = 1_000_000_000

AES_GCM_KEY = envelope_pb2.AES_GCM_KEY
HKDF_SEED = envelope_pb2.HKDF_SHA256_XNONCE_AES_GCM_SEED

_CacheKey = tuple[int, bytes, str, tuple[tuple[str, bytes], ...]]

CACHE_MISSES = [0]  # kube's apiserver_storage_envelope_transformation_cache_misses_total: DEKs asked of a plugin


class _Counter:
    """kube's nonce generator: 4 random bytes, then a counter that never repeats within the DEK's life."""

    def __init__(self) -> None:
        self._next = COUNTER_ZERO

    def __call__(self) -> bytes:
        self._next += 1
        return os.urandom(4) + struct.pack("<Q", self._next)


class _SeedReader:
    """Reads values under an HKDF seed: key = HKDF-Expand(SHA-256, seed, info), info the value's first 32 bytes."""

    def __init__(self, seed: bytes) -> None:
        self._seed = seed

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        if len(data) < SEED_INFO:
            raise TransformError("the stored data was shorter than the required size")
        key = HKDFExpand(hashes.SHA256(), 32, data[:SEED_INFO]).derive(self._seed)
        return AesGcm(key).from_storage(data[SEED_INFO:], context)

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        raise TransformError("a DEK seed read from storage is never used to write")


class _WriteState:
    """The DEK writes use now, and what every value written with it carries."""

    def __init__(self, key_id: str, encrypted_dek: bytes, annotations: dict[str, bytes], dek: bytes) -> None:
        self.key_id = key_id
        self.encrypted_dek = encrypted_dek
        self.annotations = annotations
        self.gcm = AesGcm(dek, nonces=_Counter())
        self.expires = time.monotonic() + WRITE_DEK_TTL


class KmsProvider:
    """One `kms` provider of the configuration: a Transformer over a plugin, and its health."""

    def __init__(self, config: KmsConfig) -> None:
        self.config = config
        self.name = config.name
        target = config.endpoint  # grpc dials unix:///path itself
        self._channel = grpc.aio.insecure_channel(target)
        self._stub = kms_pb2_grpc.KeyManagementServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._state: _WriteState | None = None
        self._readers: dict[_CacheKey, Transformer] = {}
        self._loading: dict[_CacheKey, asyncio.Future[None]] = {}
        self._probe_at = -1e18
        self._probe_ttl = 0.0
        self._probe_reason: str | None = "not probed yet"
        self._probe_lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> str | None:
        """Probe once (making the first DEK when the plugin answers) and keep polling; the first reason."""
        reason = await self.probe(force=True)
        self._poller = asyncio.get_running_loop().create_task(self._poll(), name=f"kms-v2-{self.name}")
        return reason

    async def close(self) -> None:
        await cancel(self._poller)
        await self._channel.close()

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(NEGATIVE_INTERVAL if self._probe_reason else POSITIVE_INTERVAL)
            await self.probe(force=True)

    # --- health and the write DEK -------------------------------------------------------------------------

    async def probe(self, *, force: bool = False) -> str | None:
        """Status, within its TTL from the last answer: None when healthy, else why not (kube's words)."""
        async with self._probe_lock:
            now = time.monotonic()
            if not force and now - self._probe_at < self._probe_ttl:
                return self._probe_reason
            reason = await self._status()
            self._probe_at = time.monotonic()
            self._probe_ttl = PROBE_NEGATIVE_TTL if reason else PROBE_POSITIVE_TTL
            if reason and reason != self._probe_reason:
                log.warning("KMS v2 provider %s is unhealthy: %s", self.name, reason)
            self._probe_reason = reason
            return reason

    async def _status(self) -> str | None:
        try:
            response = await self._stub.Status(kms_pb2.StatusRequest(), timeout=self.config.timeout,
                                               wait_for_ready=True)
        except grpc.aio.AioRpcError as err:
            return f"failed to get kms-plugin status, error: {err.code().name}: {err.details()}"
        problems: list[str] = []
        if response.healthz != "ok":
            problems.append(f"got unexpected healthz status: {response.healthz}")
        if response.version not in VERSIONS:
            problems.append(f"expected KMSv2 API version v2, got {response.version}")
        key_problem = _key_id_problem(response.key_id)
        if key_problem:
            problems.append(f"got invalid KMSv2 KeyID {response.key_id!r}: {key_problem}")
        elif not problems:
            state = self._state
            if state is None or state.key_id != response.key_id or time.monotonic() > state.expires:
                try:
                    await self._rotate()
                except TransformError as err:
                    problems.append(str(err))
            else:
                state.expires = time.monotonic() + WRITE_DEK_TTL
        return "; ".join(problems) or None

    async def _rotate(self) -> None:
        """A new DEK, encrypted by the plugin: writes use it from now on."""
        dek = os.urandom(32)
        try:
            response = await self._stub.Encrypt(kms_pb2.EncryptRequest(plaintext=dek, uid=str(uuid.uuid4())),
                                                timeout=self.config.timeout, wait_for_ready=True)
        except grpc.aio.AioRpcError as err:
            raise TransformError(f"failed to encrypt DEK, error: {err.code().name}: {err.details()}") from None
        annotations = dict(response.annotations)
        problem = (_key_id_problem(response.key_id) or _dek_problem(response.ciphertext)
                   or _annotations_problem(annotations))
        if problem:
            raise TransformError(f"failed to encrypt DEK, error: {problem}")
        state = _WriteState(response.key_id, response.ciphertext, annotations, dek)
        self._readers[_cache_key(AES_GCM_KEY, state.encrypted_dek, state.key_id, annotations)] = state.gcm
        self._state = state
        log.info("KMS v2 provider %s writes with a new DEK under key ID %r", self.name, state.key_id)

    def key_id(self) -> str | None:
        """The key ID writes use now (None before the plugin first answered)."""
        return self._state.key_id if self._state is not None else None

    # --- Transformer --------------------------------------------------------------------------------------

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        state = self._state
        if state is None:
            raise TransformError(f"KMS v2 provider {self.name} has no DEK: its plugin has not answered")
        if time.monotonic() > state.expires:
            raise TransformError(f"encryptedDEKSource with keyID {state.key_id!r} expired: the KMS v2 plugin of"
                                 f" provider {self.name} has not answered a Status for {WRITE_DEK_TTL:.0f}s")
        out = envelope_pb2.EncryptedObject(
            encryptedData=state.gcm.to_storage(data, context), keyID=state.key_id,
            encryptedDEKSource=state.encrypted_dek, annotations=state.annotations,
            encryptedDEKSourceType=AES_GCM_KEY)
        return out.SerializeToString()

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        obj = envelope_pb2.EncryptedObject()
        try:
            obj.ParseFromString(data)
        except DecodeError as err:
            raise TransformError(f"failed to decode the KMS v2 encrypted object: {err}") from None
        annotations = obj.annotations
        key = (obj.encryptedDEKSourceType, obj.encryptedDEKSource, obj.keyID,
               tuple(sorted(annotations.items())) if annotations else ())
        reader = self._readers.get(key)
        if reader is None:  # only what a known DEK was validated with can find one: validate the rest now
            plain_annotations = dict(annotations)
            problem = _object_problem(obj, plain_annotations)
            if problem:
                raise TransformError(problem)
            raise KeyPending(self._loader(key, obj.keyID, plain_annotations))
        if not obj.encryptedData:
            raise TransformError("encrypted data is empty")
        return reader.from_storage(obj.encryptedData, context)

    def _loader(self, key: _CacheKey, key_id: str, annotations: dict[str, bytes]) -> Callable[[], asyncio.Future[None]]:
        def load() -> asyncio.Future[None]:
            pending = self._loading.get(key)
            if pending is None:
                pending = asyncio.ensure_future(self._decrypt_dek(key, key_id, annotations))
                self._loading[key] = pending
                pending.add_done_callback(lambda _: self._loading.pop(key, None))
            return pending

        return load

    async def _decrypt_dek(self, key: _CacheKey, key_id: str, annotations: dict[str, bytes]) -> None:
        kind, encrypted = key[0], key[1]
        CACHE_MISSES[0] += 1
        request = kms_pb2.DecryptRequest(ciphertext=encrypted, uid=str(uuid.uuid4()), key_id=key_id,
                                         annotations=annotations)
        try:
            response = await self._stub.Decrypt(request, timeout=self.config.timeout, wait_for_ready=True)
        except grpc.aio.AioRpcError as err:
            raise TransformError(f"failed to decrypt DEK, error: {err.code().name}: {err.details()}") from None
        plaintext = response.plaintext
        if kind == HKDF_SEED:
            self._readers[key] = _SeedReader(plaintext)
        elif len(plaintext) in (16, 24, 32):
            self._readers[key] = AesGcm(plaintext)
        else:
            raise TransformError(f"failed to decrypt DEK, error: crypto/aes: invalid key size {len(plaintext)}")


def _cache_key(kind: int, encrypted_dek: bytes, key_id: str, annotations: dict[str, bytes]) -> _CacheKey:
    return kind, encrypted_dek, key_id, tuple(sorted(annotations.items()))


def _key_id_problem(key_id: str) -> str | None:
    if not key_id:
        return "keyID is empty"
    if len(key_id) > MAX_KEY_ID:
        return f"keyID is {len(key_id)} bytes, which exceeds the max size of {MAX_KEY_ID}"
    return None


def _dek_problem(encrypted: bytes) -> str | None:
    if not encrypted:
        return "encrypted DEK source is empty"
    if len(encrypted) > MAX_DEK_SOURCE:
        return f"encrypted DEK source is {len(encrypted)} bytes, which exceeds the max size of {MAX_DEK_SOURCE}"
    return None


def _annotations_problem(annotations: dict[str, bytes]) -> str | None:
    size = sum(len(k) + len(v) for k, v in annotations.items())
    if size > MAX_ANNOTATIONS:
        return f"annotations exceeds max size of {MAX_ANNOTATIONS}"
    return None


def _object_problem(obj: envelope_pb2.EncryptedObject, annotations: dict[str, bytes]) -> str | None:
    if obj.encryptedDEKSourceType not in (AES_GCM_KEY, HKDF_SEED):
        return f"unknown encryptedDEKSourceType: {obj.encryptedDEKSourceType}"
    if not obj.encryptedData:
        return "encrypted data is empty"
    problem = _dek_problem(obj.encryptedDEKSource)
    if problem:
        return f"failed to validate encrypted DEK source: {problem}"
    problem = _key_id_problem(obj.keyID)
    if problem:
        return f"failed to validate key id: {problem}"
    problem = _annotations_problem(annotations)
    return f"failed to validate annotations: {problem}" if problem else None
