"""Encryption at rest (storage/encryption/): kube's providers and stored formats over real LMDB and etcd.

Values written through the EncryptedStore are read back raw from the backend (LMDB's file and the backend's
own reads, etcd's Range) and carry no plaintext, only kube's prefix and format, which a decoder written here
from kube's description (not Capstan's code) opens; values written in kube's format are read through the
store. Rotation by reordering and rewriting, reloading, the KMS v2 envelope with a real plugin server on a unix
socket (tests/storage/kms_plugin.py), and kube's validation of the configuration.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl import secret

from storage import Store
from storage.encryption import ConfigError, EncryptedStore, Encryption, TransformError, ciphers
from storage.encryption import state as encryption_state
from storage.encryption.pb.v2 import envelope_pb2
from tests.storage.conftest import FAST, open_backend, take, within
from tests.storage.etcd_server import EtcdServer
from tests.storage.kms_plugin import KmsPlugin

SECRET = b'{"data":{"password":"c3VwZXItc2VjcmV0LXBhc3N3b3Jk"},"marker":"PLAINTEXT-MARKER-4711"}'
MARKER = b"PLAINTEXT-MARKER-4711"
KEY = b"/core/secrets/default/db"
K1 = bytes(range(32))
K2 = bytes(range(32, 64))


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def config(*entries: tuple[list[str], list[str]]) -> str:
    """An EncryptionConfiguration: each entry is (resources, providers as YAML flow mappings)."""
    out = ["apiVersion: apiserver.config.k8s.io/v1", "kind: EncryptionConfiguration", "resources:"]
    for resources, providers in entries:
        out.append(f"- resources: [{', '.join(repr(r) for r in resources)}]")
        out.append("  providers:")
        out.extend(f"  - {p}" for p in providers)
    return "\n".join(out) + "\n"


def keyed(kind: str, name: str, key: bytes) -> str:
    return f"{kind}: {{keys: [{{name: {name}, secret: {b64(key)}}}]}}"


IDENTITY = "identity: {}"


def kms(plugin: KmsPlugin, name: str = "vault") -> str:
    return f"kms: {{apiVersion: v2, name: {name}, endpoint: '{plugin.endpoint}', timeout: 3s}}"


# --- kube's formats, decoded here from kube's description ---------------------------------------------------


def kube_open(kind: str, key: bytes, body: bytes, aad: bytes) -> bytes:
    if kind == "aescbc":
        decryptor = Cipher(algorithms.AES(key), modes.CBC(body[:16])).decryptor()
        padded = decryptor.update(body[16:]) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        return unpadder.update(padded) + unpadder.finalize()
    if kind == "aesgcm":
        return AESGCM(key).decrypt(body[:12], body[12:], aad)
    assert kind == "secretbox"
    return secret.SecretBox(key).decrypt(body[24:], body[:24])


def kube_seal(kind: str, key: bytes, plain: bytes, aad: bytes) -> bytes:
    if kind == "aescbc":
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        return iv + encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
    if kind == "aesgcm":
        nonce = os.urandom(12)
        return nonce + AESGCM(key).encrypt(nonce, plain, aad)
    assert kind == "secretbox"
    return bytes(secret.SecretBox(key).encrypt(plain, os.urandom(24)))


# --- fixtures -----------------------------------------------------------------------------------------------


@pytest.fixture
async def plugin(tmp_path: Path) -> AsyncIterator[KmsPlugin]:
    # unix socket paths are short: tmp_path can pass their 108 bytes
    server = KmsPlugin(Path(f"/tmp/capstan-kms-{os.getpid()}-{id(tmp_path)}.sock"))
    await server.start()
    yield server
    await server.stop()
    server.socket.unlink(missing_ok=True)


async def encrypted(tmp_path: Path, text: str, backend: str = "lmdb", etcd: EtcdServer | None = None,
                    *, reload: bool = False) -> tuple[EncryptedStore, Store, bytes]:
    """An EncryptedStore over a fresh backend; the backend itself; the authenticated data's root."""
    path = tmp_path / "encryption.yaml"
    path.write_text(text)
    inner = await open_backend(backend, tmp_path / "store", FAST, etcd)
    root = getattr(getattr(inner, "_config", None), "root", b"")  # etcd: --etcd-prefix, LMDB: none
    return EncryptedStore(inner, await Encryption.open(path, reload=reload), context_root=root), inner, root


# --- formats ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["lmdb", "etcd"])
@pytest.mark.parametrize("kind", ["aescbc", "aesgcm", "secretbox"])
async def test_stored_values_are_kubes_format_and_carry_no_plaintext(
        tmp_path: Path, request: pytest.FixtureRequest, backend: str, kind: str) -> None:
    etcd = request.getfixturevalue("etcd_server") if backend == "etcd" else None
    store, inner, root = await encrypted(tmp_path, config((["secrets"], [keyed(kind, "k1", K1)])), backend, etcd)
    try:
        base = store.current_revision()
        watch = store.watch(b"/core/secrets/", from_revision=base)
        created = await within(store.create(KEY, SECRET))
        assert created.ok and created.current is not None and created.current.value == SECRET
        raw = (await inner.get(KEY)).kv
        assert raw is not None and MARKER not in raw.value
        prefix = f"k8s:enc:{kind}:v1:k1:".encode()
        assert raw.value.startswith(prefix)
        assert kube_open(kind, K1, raw.value[len(prefix):], root + KEY) == SECRET
        # every read path answers plaintext: get, list, watch, update's previous value
        assert (await store.get(KEY)).kv == created.current
        assert [kv.value for kv in (await store.list(b"/core/secrets/")).kvs] == [SECRET]
        assert [event.kv.value for event in await take(watch, 1)] == [SECRET]
        updated = await store.update(KEY, SECRET + b" ")
        assert updated.prev is not None and updated.prev.value == SECRET
        raws = [kv.value for kv in (await inner.list(b"/core/secrets/")).kvs]
        assert raws and all(MARKER not in value for value in raws)
        if backend == "lmdb":  # the file itself: no page holds the plaintext
            await store.close()
            assert MARKER not in (tmp_path / "store" / "data.mdb").read_bytes()
    finally:
        await store.close()


@pytest.mark.parametrize("kind", ["aescbc", "aesgcm", "secretbox"])
async def test_values_kube_wrote_are_read(tmp_path: Path, kind: str) -> None:
    store, inner, root = await encrypted(tmp_path, config((["secrets"], [keyed(kind, "k1", K1)])))
    try:
        await inner.create(KEY, f"k8s:enc:{kind}:v1:k1:".encode() + kube_seal(kind, K1, SECRET, root + KEY))
        kv = (await store.get(KEY)).kv
        assert kv is not None and kv.value == SECRET
    finally:
        await store.close()


async def test_aesgcm_authenticates_the_key(tmp_path: Path) -> None:
    """A value copied under another key does not decrypt: the storage key is AES-GCM's authenticated data."""
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [keyed("aesgcm", "k1", K1)])))
    try:
        await store.create(KEY, SECRET)
        raw = (await inner.get(KEY)).kv
        assert raw is not None
        await inner.create(b"/core/secrets/default/copy", raw.value)
        with pytest.raises(TransformError, match="message authentication failed"):
            await store.get(b"/core/secrets/default/copy")
    finally:
        await store.close()


async def test_each_revision_is_decrypted_once(tmp_path: Path) -> None:
    """A write's own reads and watch events decrypt nothing; another store over the same backend decrypts each
    (key, revision) once however many gets, lists and watchers hand it out (kube's transformation counter)."""
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [keyed("aesgcm", "k1", K1)])))
    other = EncryptedStore(inner, await Encryption.open(tmp_path / "encryption.yaml"))
    decrypted = ("from_storage", "k8s:enc:aesgcm:v1:k1:", "OK")
    try:
        base = store.current_revision()
        watches = [s.watch(b"/core/secrets/", from_revision=base) for s in (store, store, other, other)]
        before = ciphers.OPERATIONS[decrypted]
        for i in range(3):
            await store.create(KEY + b"%d" % i, SECRET)
        for watch in watches[:2]:
            assert [e.kv.value for e in await take(watch, 3)] == [SECRET] * 3
        await store.get(KEY + b"0")
        await store.list(b"/core/secrets/")
        assert ciphers.OPERATIONS[decrypted] == before
        for watch in watches[2:]:
            assert [e.kv.value for e in await take(watch, 3)] == [SECRET] * 3
        await other.get(KEY + b"0")
        await other.list(b"/core/secrets/")
        assert ciphers.OPERATIONS[decrypted] == before + 3
    finally:
        await other.encryption.close()
        await store.close()


@pytest.mark.parametrize(("resources", "key", "encrypted_"), [
    (["secrets"], b"/core/secrets/ns/a", True),
    (["secrets"], b"/core/configmaps/ns/a", False),
    (["*."], b"/core/configmaps/ns/a", True),
    (["*."], b"/apps/deployments/ns/a", False),
    (["*.apps"], b"/apps/deployments/ns/a", True),
    (["deployments.apps"], b"/apps/deployments/ns/a", True),
    (["deployments.apps"], b"/apps/replicasets/ns/a", False),
    (["widgets.example.com"], b"/example.com/widgets/ns/a", True),
    (["*.*"], b"/example.com/widgets/a", True),
    (["*.*"], b"/core/namespaces/default", True),
], ids=lambda v: v.decode() if isinstance(v, bytes) else str(v))
async def test_which_resources_are_encrypted(tmp_path: Path, resources: list[str], key: bytes,
                                             encrypted_: bool) -> None:
    store, inner, _ = await encrypted(tmp_path, config((resources, [keyed("aesgcm", "k1", K1)])))
    try:
        await store.create(key, SECRET)
        raw = (await inner.get(key)).kv
        assert raw is not None and raw.value.startswith(b"k8s:enc:aesgcm:v1:k1:") is encrypted_
        assert (await store.get(key)).kv.value == SECRET  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_the_first_entry_naming_a_resource_wins(tmp_path: Path) -> None:
    text = config((["secrets"], [keyed("aescbc", "cbc", K1)]), (["*.*"], [keyed("secretbox", "box", K2)]))
    store, inner, _ = await encrypted(tmp_path, text)
    try:
        await store.create(KEY, SECRET)
        await store.create(b"/core/configmaps/ns/a", SECRET)
        assert (await inner.get(KEY)).kv.value.startswith(b"k8s:enc:aescbc:v1:cbc:")  # type: ignore[union-attr]
        raw = (await inner.get(b"/core/configmaps/ns/a")).kv
        assert raw is not None and raw.value.startswith(b"k8s:enc:secretbox:v1:box:")
    finally:
        await store.close()


async def test_identity_refuses_encrypted_values_and_missing_keys_fail(tmp_path: Path) -> None:
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [keyed("aesgcm", "k1", K1)])))
    try:
        await inner.create(KEY, SECRET)  # plaintext written before encryption was configured, no identity listed
        with pytest.raises(TransformError, match="no matching prefix found"):
            await store.get(KEY)
        await inner.create(b"/core/configmaps/ns/a", b"k8s:enc:aesgcm:v1:k1:" + b"x" * 40)  # not an encrypted one
        with pytest.raises(TransformError, match="identity transformer tried to read encrypted data"):
            await store.get(b"/core/configmaps/ns/a")
    finally:
        await store.close()


# --- rotation and reload -----------------------------------------------------------------------------------


async def test_rotation_by_reordering_keys_and_rewriting(tmp_path: Path) -> None:
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [IDENTITY, keyed("aesgcm", "k1", K1)])))
    path = tmp_path / "encryption.yaml"
    try:
        await store.create(b"/core/secrets/ns/plain", SECRET)  # identity first: written as it is
        assert (await inner.get(b"/core/secrets/ns/plain")).kv.value == SECRET  # type: ignore[union-attr]
        # 1. encrypt with k1, still reading plaintext
        path.write_text(config((["secrets"], [keyed("aesgcm", "k1", K1), IDENTITY])))
        assert await store.encryption.reload()
        await store.create(KEY, SECRET)
        # 2. add k2 as the write key, k1 still read
        path.write_text(config((["secrets"], [keyed("aesgcm", "k2", K2), keyed("aesgcm", "k1", K1), IDENTITY])))
        assert await store.encryption.reload()
        assert (await store.get(KEY)).kv.value == SECRET  # type: ignore[union-attr]
        # 3. rewrite everything (kubectl get secrets -A -o json | kubectl replace -f -)
        for kv in (await store.list(b"/core/secrets/")).kvs:
            assert (await store.update(kv.key, kv.value, expected_mod_revision=kv.mod_revision)).ok
        raws = (await inner.list(b"/core/secrets/")).kvs
        assert [kv.value[:21] for kv in raws] == [b"k8s:enc:aesgcm:v1:k2:"] * 2
        # 4. drop k1 and identity: everything still reads
        path.write_text(config((["secrets"], [keyed("aesgcm", "k2", K2)])))
        assert await store.encryption.reload()
        assert [kv.value for kv in (await store.list(b"/core/secrets/")).kvs] == [SECRET, SECRET]
    finally:
        await store.close()


async def test_an_invalid_reload_keeps_the_configuration_in_force(tmp_path: Path) -> None:
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [keyed("aesgcm", "k1", K1)])))
    path = tmp_path / "encryption.yaml"
    try:
        path.write_text(config((["secrets"], ["aesgcm: {keys: [{name: k1, secret: c2hvcnQ=}]}"])))
        assert not await store.encryption.reload()
        assert store.encryption.reload_failures == 1
        await store.create(KEY, SECRET)
        assert (await inner.get(KEY)).kv.value.startswith(b"k8s:enc:aesgcm:v1:k1:")  # type: ignore[union-attr]
        assert not await store.encryption.reload()  # the same bad file is not tried again
        assert store.encryption.reload_failures == 1
    finally:
        await store.close()


async def test_automatic_reload_follows_the_file(tmp_path: Path) -> None:
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [keyed("aesgcm", "k1", K1)])), reload=True)
    try:
        (tmp_path / "encryption.yaml").write_text(
            config((["secrets"], [keyed("secretbox", "box", K2), keyed("aesgcm", "k1", K1)])))
        for _ in range(int(5 / encryption_state.RELOAD_INTERVAL) * 10):
            if store.encryption.reloads:
                break
            await asyncio.sleep(encryption_state.RELOAD_INTERVAL / 10)
        assert store.encryption.reloads == 1
        await store.create(KEY, SECRET)
        assert (await inner.get(KEY)).kv.value.startswith(b"k8s:enc:secretbox:v1:box:")  # type: ignore[union-attr]
    finally:
        await store.close()


# --- KMS v2 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["lmdb", "etcd"])
async def test_kms_v2_envelope(tmp_path: Path, request: pytest.FixtureRequest, plugin: KmsPlugin,
                               backend: str) -> None:
    etcd = request.getfixturevalue("etcd_server") if backend == "etcd" else None
    text = config((["secrets"], [kms(plugin)]))
    store, inner, root = await encrypted(tmp_path, text, backend, etcd)
    try:
        for i in range(20):
            assert (await store.create(KEY + str(i).encode(), SECRET)).ok
        assert plugin.calls["Encrypt"] == 1  # one DEK for every write under one key ID
        raw = (await inner.get(KEY + b"0")).kv
        assert raw is not None and MARKER not in raw.value
        prefix = b"k8s:enc:kms:v2:vault:"
        assert raw.value.startswith(prefix)
        obj = envelope_pb2.EncryptedObject.FromString(raw.value[len(prefix):])
        assert obj.keyID == "key-1" and obj.encryptedDEKSourceType == envelope_pb2.AES_GCM_KEY
        assert dict(obj.annotations) == {"kms.example.com/kek": b"key-1"}
        # kube's reading: the plugin's KEK opens the DEK, the DEK opens the value with the etcd key as AAD
        kek = plugin.keks["key-1"]
        dek = AESGCM(kek).decrypt(obj.encryptedDEKSource[:12], obj.encryptedDEKSource[12:], None)
        data = obj.encryptedData
        assert AESGCM(dek).decrypt(data[:12], data[12:], root + KEY + b"0") == SECRET
        # another process (a second store over the same backend) asks the plugin for the DEK once
        other = EncryptedStore(inner, await Encryption.open(tmp_path / "encryption.yaml"), context_root=root)
        decrypts = plugin.calls["Decrypt"]
        values = [kv.value for kv in (await other.list(b"/core/secrets/")).kvs]
        assert values == [SECRET] * 20
        assert plugin.calls["Decrypt"] == decrypts + 1
        await other.encryption.close()
    finally:
        await store.close()


async def test_kms_v2_key_rotation_and_health(tmp_path: Path, plugin: KmsPlugin) -> None:
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [kms(plugin)])))
    encryption = store.encryption
    try:
        assert await encryption.kms_health() is None
        await store.create(KEY, SECRET)
        plugin.key_id = "key-2"  # the plugin rotated its KEK: the next Status makes a new DEK under it
        (provider,) = encryption.kms_providers()
        assert await provider.probe(force=True) is None
        assert provider.key_id() == "key-2" and plugin.calls["Encrypt"] == 2
        await store.create(KEY + b"-new", SECRET)
        ids = {envelope_pb2.EncryptedObject.FromString(kv.value[len(b"k8s:enc:kms:v2:vault:"):]).keyID
               for kv in (await inner.list(b"/core/secrets/")).kvs}
        assert ids == {"key-1", "key-2"}
        assert [kv.value for kv in (await store.list(b"/core/secrets/")).kvs] == [SECRET, SECRET]
        plugin.healthz = "the HSM is on fire"
        assert await provider.probe(force=True) == "got unexpected healthz status: the HSM is on fire"
        assert "kms-provider vault" in (await encryption.kms_health() or "")
        plugin.healthz = "ok"
        await plugin.stop()
        reason = await provider.probe(force=True)
        assert reason is not None and reason.startswith("failed to get kms-plugin status")
    finally:
        await store.close()


async def test_kms_v2_plugin_down_at_start(tmp_path: Path, plugin: KmsPlugin) -> None:
    """As kube: the server starts, writes through the provider fail and kms-providers fails until the plugin
    answers a Status, which makes the DEK."""
    await plugin.stop()
    store, _, _ = await encrypted(tmp_path, config((["secrets"], [kms(plugin)])))
    try:
        assert (await store.encryption.kms_health() or "").startswith("kms-provider vault: failed to get kms-plugin")
        with pytest.raises(TransformError, match="has no DEK: its plugin has not answered"):
            await store.create(KEY, SECRET)
        await plugin.start()
        (provider,) = store.encryption.kms_providers()
        assert await provider.probe(force=True) is None
        assert (await store.create(KEY, SECRET)).ok
        assert await store.encryption.kms_health() is None
    finally:
        await store.close()


async def test_kms_v2_reload_refuses_a_plugin_that_does_not_answer(tmp_path: Path, plugin: KmsPlugin) -> None:
    store, inner, _ = await encrypted(tmp_path, config((["secrets"], [kms(plugin)])))
    try:
        (tmp_path / "encryption.yaml").write_text(config((["secrets"], [
            "kms: {apiVersion: v2, name: gone, endpoint: 'unix:///tmp/capstan-no-such.sock', timeout: 1s}",
            kms(plugin)])))
        assert not await store.encryption.reload()
        await store.create(KEY, SECRET)
        assert (await inner.get(KEY)).kv.value.startswith(b"k8s:enc:kms:v2:vault:")  # type: ignore[union-attr]
    finally:
        await store.close()


# --- validation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "message"), [
    ((["Secrets"], [IDENTITY]), 'resources[0].resources[0]: Invalid value: "Secrets": resource name should not'
                                " contain capital letters"),
    ((["*"], [IDENTITY]), "use '*.' to encrypt all the resources from core API group or *.* to encrypt all"),
    ((["secrets", "*."], [IDENTITY]), "using overlapping resources such as 'secrets' and '*.'"),
    ((["secrets", "secrets"], [IDENTITY]), "the same resource cannot be specified multiple times"),
    ((["events.events.k8s.io"], [IDENTITY]), "'*.events.k8s.io' objects are stored using the 'events' API group"),
    ((["secrets.*"], [IDENTITY]), "encrypting the same resource across groups is not supported"),
    ((["secrets"], []), "resources[0].providers: Required value: at least one resources[0].providers is required"),
    ((["secrets"], ["aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}"]),
     'resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected'
     " length, got 5, expected one of [16 24 32]"),
    ((["secrets"], [keyed("secretbox", "k", K1[:16])]), "got 16, expected one of [32]"),
    ((["secrets"], ["aescbc: {keys: [{name: k, secret: '!!'}]}"]), "secrets must be base64 encoded"),
    ((["secrets"], ["{aescbc: {keys: []}, identity: {}}"]), "more than one provider specified in a single element"),
    ((["secrets"], ["kms: {apiVersion: v2, name: 'a:b', endpoint: 'unix:///x.sock'}"]),
     "invalid KMS provider name a:b, must not contain ':'"),
    ((["secrets"], ["kms: {apiVersion: v2, name: a, endpoint: 'tcp://x:1'}"]),
     'unsupported scheme "tcp" for KMS provider, only unix is supported'),
    ((["secrets"], ["kms: {apiVersion: v2, name: a, endpoint: 'unix:///x.sock', cachesize: 10}"]),
     "cachesize is not supported in v2"),
])
async def test_configuration_validation(tmp_path: Path, entry: tuple[list[str], list[str]], message: str) -> None:
    path = tmp_path / "encryption.yaml"
    path.write_text(config(entry))
    with pytest.raises(ConfigError) as raised:
        await Encryption.open(path)
    assert message in str(raised.value)
