"""The value transformers of kube-apiserver's encryption at rest, byte for byte.

Each provider of an EncryptionConfiguration becomes a `Transformer` behind its prefix, and a resource's
providers become one `Chain`, as kube's value.NewPrefixTransformers builds them
(k8s.io/apiserver/pkg/storage/value/encrypt/...):

  identity    no prefix, the value as it is; it refuses to read a value that starts with `k8s:enc:`
  aescbc      `k8s:enc:aescbc:v1:<key>:` + IV (16) + AES-CBC of the value with PKCS#7 padding
  aesgcm      `k8s:enc:aesgcm:v1:<key>:` + nonce (12) + AES-GCM of the value (tag last)
  secretbox   `k8s:enc:secretbox:v1:<key>:` + nonce (24) + NaCl secretbox of the value (tag first)

AES-GCM authenticates the storage key (kube passes the etcd key as the value.Context's authenticated data),
so a value copied to another key does not decrypt; AES-CBC and secretbox take no authenticated data, as in
kube. A write uses the chain's first provider; a read tries every provider whose prefix the value carries,
in order, and identity (no prefix) last of all, so reordering the providers rotates keys without losing reads.

A transformer is synchronous: a cipher over a value costs microseconds. One that must ask a remote service
first (KMS v2 on a DEK it has not decrypted yet) raises `KeyPending` with the awaitable that fetches the key;
the caller awaits it and asks again (storage/encryption/store.py).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl import exceptions as nacl_errors
from nacl import secret

from storage.errors import StorageError

ENCRYPTED_PREFIX = b"k8s:enc:"
BLOCK = 16  # AES's block: the CBC IV's length
GCM_NONCE = 12
SECRETBOX_NONCE = secret.SecretBox.NONCE_SIZE  # 24

# kube's apiserver_storage_transformation_operations_total: (transformation_type, transformer_prefix, status) ->
# count, for the resources an entry lists (storage/encryption/metrics.py serves it)
OPERATIONS: Counter[tuple[str, str, str]] = Counter()


class TransformError(StorageError):
    """A stored value no configured provider can read (a removed key, a damaged value, a KMS failure), or a
    value that cannot be encrypted now. The request fails with a 500, as kube-apiserver's does."""


class KeyPending(Exception):  # a request for a key, not a failure
    """The transformer needs a key it has to fetch first: await `load()`, then transform again."""

    def __init__(self, load: Callable[[], Awaitable[None]]) -> None:
        super().__init__("a data encryption key is being fetched")
        self.load = load


class Transformer(Protocol):
    """One provider's encryption of values, without its prefix."""

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        """The stored form of `data` at the storage key `context` (after the prefix)."""
        ...

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        """The value from its stored form (the prefix removed); TransformError when it does not decrypt."""
        ...


class Identity:
    """kube's identity transformer: values as they are; an encrypted value is an error, not plaintext."""

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        return data

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        if data.startswith(ENCRYPTED_PREFIX):
            raise TransformError("identity transformer tried to read encrypted data")
        return data


class AesCbc:
    """kube's aescbc: a random IV, then AES-CBC with PKCS#7 padding."""

    def __init__(self, key: bytes) -> None:
        self._key = algorithms.AES(key)

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        iv = os.urandom(BLOCK)
        size = BLOCK - len(data) % BLOCK  # PKCS#7: 1 to 16 bytes, each the count
        encryptor = Cipher(self._key, modes.CBC(iv)).encryptor()
        return iv + encryptor.update(data + bytes((size,)) * size) + encryptor.finalize()

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        if len(data) < BLOCK:
            raise TransformError("the stored data was shorter than the required size")
        body = data[BLOCK:]
        if len(body) % BLOCK:
            raise TransformError("the stored data is not a multiple of the block size")
        decryptor = Cipher(self._key, modes.CBC(data[:BLOCK])).decryptor()
        result = decryptor.update(body) + decryptor.finalize()
        size = result[-1] if result else 0
        if size == 0 or size > len(result):
            raise TransformError("invalid PKCS7 data (empty or not padded)")
        if result[-size:] != bytes([size]) * size:
            raise TransformError("invalid padding on input")
        return result[:-size]


class AesGcm:
    """kube's aesgcm: a random 12-byte nonce, then AES-GCM sealing the value with the storage key as
    authenticated data. `nonces` replaces the random nonce (KMS v2's per-process DEK counts instead)."""

    def __init__(self, key: bytes, nonces: Callable[[], bytes] | None = None) -> None:
        self._aead = AESGCM(key)
        self._nonce = nonces or (lambda: os.urandom(GCM_NONCE))

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        nonce = self._nonce()
        return nonce + self._aead.encrypt(nonce, data, context)

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        if len(data) < GCM_NONCE:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:GCM_NONCE], data[GCM_NONCE:], context)
        except InvalidTag:
            raise TransformError("cipher: message authentication failed") from None


class SecretBox:
    """kube's secretbox: a random 24-byte nonce, then XSalsa20-Poly1305 (golang.org/x/crypto/nacl/secretbox,
    libsodium's crypto_secretbox_easy: the tag before the ciphertext)."""

    def __init__(self, key: bytes) -> None:
        self._box = secret.SecretBox(key)

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        return bytes(self._box.encrypt(data, os.urandom(SECRETBOX_NONCE)))

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        if len(data) < SECRETBOX_NONCE:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._box.decrypt(data[SECRETBOX_NONCE:], data[:SECRETBOX_NONCE])
        except nacl_errors.CryptoError:
            raise TransformError("output array was not large enough for encryption") from None


@dataclass(frozen=True, slots=True)
class Prefixed:
    """A transformer behind the prefix its values carry (b"" for identity)."""

    prefix: bytes
    transformer: Transformer


class Chain:
    """One resource's providers in configuration order: kube's prefixTransformers."""

    def __init__(self, providers: Sequence[Prefixed]) -> None:
        if not providers:
            raise ValueError("a chain needs at least one provider")
        self._providers = tuple(providers)
        self._write = providers[0]
        self.encrypts = bool(providers[0].prefix)  # whether writes are encrypted (the first is not identity)

    def to_storage(self, data: bytes, context: bytes) -> bytes:
        first = self._write
        try:
            out = first.prefix + first.transformer.to_storage(data, context)
        except TransformError:
            OPERATIONS["to_storage", first.prefix.decode(), "Unknown"] += 1
            raise
        OPERATIONS["to_storage", first.prefix.decode(), "OK"] += 1
        return out

    def from_storage(self, data: bytes, context: bytes) -> bytes:
        errors: list[str] = []
        for provider in self._providers:
            prefix = provider.prefix
            if not data.startswith(prefix):
                continue
            try:
                out = provider.transformer.from_storage(data[len(prefix):], context)
            except TransformError as err:
                if not prefix:  # identity meeting an encrypted value: a later provider may read it
                    continue
                OPERATIONS["from_storage", prefix.decode(), "Unknown"] += 1
                errors.append(str(err))
                continue
            OPERATIONS["from_storage", prefix.decode(), "OK"] += 1
            return out
        if errors:
            raise TransformError("; ".join(errors))
        raise TransformError("no matching prefix found")


class _Unlisted(Chain):
    """kube's default for a resource no entry lists: identity alone, whose refusal of an encrypted value is the
    error (identity.NewEncryptCheckTransformer, not wrapped in prefixTransformers)."""

    def __init__(self) -> None:
        self._identity = Identity()
        super().__init__([Prefixed(b"", self._identity)])

    def from_storage(self, data: bytes, context: bytes) -> bytes:  # not counted: kube counts listed resources
        return self._identity.from_storage(data, context)


UNENCRYPTED: Chain = _Unlisted()
