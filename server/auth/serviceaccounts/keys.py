"""The service account keys: the signing key that issues tokens and the public keys that verify them, read
from PEM files as kube-apiserver reads --service-account-signing-key-file and --service-account-key-file.

A key's id (the JWT `kid` header, the JWKS `kid`) is kube's keyIDFromPublicKey: the unpadded base64url of the
SHA-256 of the public key's DER SubjectPublicKeyInfo, so tokens and documents name keys as kube's do.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

# The JWS algorithm each key signs and verifies with (kube's signerFromRSAPrivateKey / ECDSA by curve).
_CURVE_ALGORITHMS = {"secp256r1": ("ES256", "P-256"), "secp384r1": ("ES384", "P-384"),
                     "secp521r1": ("ES512", "P-521")}


class KeyFileError(ValueError):
    """A key file holds no usable key (the server refuses to start, as kube-apiserver does)."""


@dataclass(frozen=True, slots=True)
class VerificationKey:
    key: PublicKey
    kid: str
    algorithm: str


def algorithm(key: PublicKey) -> str:
    if isinstance(key, rsa.RSAPublicKey):
        return "RS256"
    return _CURVE_ALGORITHMS[key.curve.name][0]


def key_id(key: PublicKey) -> str:
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def verification_key(key: PublicKey) -> VerificationKey:
    return VerificationKey(key, key_id(key), algorithm(key))


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, rest = [], data
    while (start := rest.find(b"-----BEGIN ")) >= 0:
        end_marker = rest.find(b"-----END ", start)
        if end_marker < 0:
            break
        end = rest.find(b"-----", end_marker + 9)
        if end < 0:
            break
        blocks.append(rest[start:end + 5])
        rest = rest[end + 5:]
    return blocks


def _public_from_block(block: bytes) -> PublicKey | None:
    """keyutil.ParsePublicKeysPEM: public keys, private keys (their public half) and certificates."""
    key: Any
    if b"CERTIFICATE-----" in block:
        key = x509.load_pem_x509_certificate(block).public_key()
    elif b"PRIVATE KEY-----" in block:
        # Only the public half is kept, to verify with: the private key's consistency checks guard signing
        # with it, which load_signing_key does, with them.
        key = serialization.load_pem_private_key(block, password=None,
                                                 unsafe_skip_rsa_key_validation=True).public_key()
    else:
        key = serialization.load_pem_public_key(block)
    if isinstance(key, rsa.RSAPublicKey):
        return key
    if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name in _CURVE_ALGORITHMS:
        return key
    return None


def load_public_keys(paths: Iterable[Path]) -> tuple[VerificationKey, ...]:
    keys: dict[str, VerificationKey] = {}
    for path in paths:
        try:
            found = [k for k in map(_public_from_block, _pem_blocks(path.read_bytes())) if k is not None]
        except (OSError, ValueError) as err:
            raise KeyFileError(f"failed to read service account key file {path}: {err}") from None
        if not found:
            raise KeyFileError(f"data does not contain any valid RSA or ECDSA public keys: {path}")
        for key in found:
            keys.setdefault(key_id(key), verification_key(key))
    return tuple(keys.values())


def load_signing_key(path: Path) -> PrivateKey:
    try:
        # An RSA key is checked as kube checks it (_validated), not by OpenSSL's RSA_check_key: that also tests
        # both primes for primality, ~30 ms a 2048-bit key at every start, which kube-apiserver does not do.
        key = serialization.load_pem_private_key(path.read_bytes(), password=None,
                                                 unsafe_skip_rsa_key_validation=True)
        if isinstance(key, rsa.RSAPrivateKey):
            return _validated(key)
    except (OSError, ValueError, TypeError) as err:
        raise KeyFileError(f"failed to parse service-account-issuer-key-file {path}: {err}") from None
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name in _CURVE_ALGORITHMS:
        return key
    raise KeyFileError(f"service-account-signing-key-file {path} holds neither an RSA nor an ECDSA (P-256, P-384, "
                    "P-521) private key")


def _validated(key: rsa.RSAPrivateKey) -> rsa.RSAPrivateKey:
    """The key if it is one Go's rsa.PrivateKey.Validate accepts (kube's keyutil parses signing keys with it):
    a public exponent in [2, 2^31), primes above 1 whose product is the modulus, and d inverting e modulo each
    prime less one; ValueError with Go's words if not. The CRT values the file holds are not checked, as Go
    computes its own: a key whose stored ones are off is rebuilt with the right ones."""
    numbers = key.private_numbers()
    public = numbers.public_numbers
    p, q, d, e = numbers.p, numbers.q, numbers.d, public.e
    if e < 2:
        raise ValueError("crypto/rsa: public exponent too small")
    if e >= 1 << 31:
        raise ValueError("crypto/rsa: public exponent too large")
    if p <= 1 or q <= 1:
        raise ValueError("crypto/rsa: invalid prime value")
    if p * q != public.n:
        raise ValueError("crypto/rsa: invalid modulus")
    if (d * e) % (p - 1) != 1 or (d * e) % (q - 1) != 1:
        raise ValueError("crypto/rsa: invalid exponents")
    crt = (rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q), rsa.rsa_crt_iqmp(p, q))
    if (numbers.dmp1, numbers.dmq1, numbers.iqmp) == crt:
        return key
    return rsa.RSAPrivateNumbers(p, q, d, *crt, public).private_key(unsafe_skip_rsa_key_validation=True)


def jwk(key: VerificationKey) -> dict[str, str]:
    """The key as a JSON Web Key, in the members kube's JWKS prints (`use: sig`, `kid`, `alg`)."""
    def b64(number: int, size: int) -> str:
        return base64.urlsafe_b64encode(number.to_bytes(size, "big")).rstrip(b"=").decode()

    public = key.key
    if isinstance(public, rsa.RSAPublicKey):
        numbers = public.public_numbers()
        exponent_size = (numbers.e.bit_length() + 7) // 8
        return {"use": "sig", "kty": "RSA", "kid": key.kid, "alg": key.algorithm,
                "n": b64(numbers.n, (numbers.n.bit_length() + 7) // 8), "e": b64(numbers.e, exponent_size)}
    ec_numbers = public.public_numbers()
    size = (public.curve.key_size + 7) // 8
    return {"use": "sig", "kty": "EC", "kid": key.kid, "crv": _CURVE_ALGORITHMS[public.curve.name][1],
            "alg": key.algorithm, "x": b64(ec_numbers.x, size), "y": b64(ec_numbers.y, size)}
