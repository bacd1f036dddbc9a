"""The service-account signing key file as kube-apiserver reads it: the RSA keys Go's rsa.PrivateKey.Validate
accepts and refuses (written as PKCS#1 DER by hand, since cryptography will not build an inconsistent key), ECDSA
keys, and files that hold no key. A key that loads signs what its public half verifies."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from server.auth.serviceaccounts.keys import KeyFileError, load_signing_key

_RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
_N = _RSA.private_numbers()


def _length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    raw = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _integer(value: int) -> bytes:
    raw = value.to_bytes(value.bit_length() // 8 + 1, "big")  # a leading zero keeps it positive
    return b"\x02" + _length(len(raw)) + raw


def _pkcs1(**changes: int) -> bytes:
    """RSAPrivateKey (RFC 8017 A.1.2) from the test key's numbers, with `changes` to some of them."""
    fields = {"n": _N.public_numbers.n, "e": _N.public_numbers.e, "d": _N.d, "p": _N.p, "q": _N.q,
              "dp": _N.dmp1, "dq": _N.dmq1, "qinv": _N.iqmp} | changes
    body = _integer(0) + b"".join(_integer(fields[name]) for name in ("n", "e", "d", "p", "q", "dp", "dq", "qinv"))
    der = b"\x30" + _length(len(body)) + body
    lines = base64.encodebytes(der).decode().replace("\n", "")
    wrapped = "\n".join(lines[i:i + 64] for i in range(0, len(lines), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{wrapped}\n-----END RSA PRIVATE KEY-----\n".encode()


def _ec(curve: ec.EllipticCurve) -> bytes:
    return ec.generate_private_key(curve).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())


def _signs(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> None:
    message = b"header.claims"
    if isinstance(key, rsa.RSAPrivateKey):
        key.public_key().verify(key.sign(message, padding.PKCS1v15(), hashes.SHA256()), message,
                                padding.PKCS1v15(), hashes.SHA256())
    else:
        key.public_key().verify(key.sign(message, ec.ECDSA(hashes.SHA256())), message, ec.ECDSA(hashes.SHA256()))


@pytest.mark.parametrize(("data", "kind"), [
    pytest.param(_pkcs1(), rsa.RSAPrivateKey, id="rsa-pkcs1"),
    pytest.param(_RSA.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()), rsa.RSAPrivateKey, id="rsa-pkcs8"),
    # Go computes the CRT values itself, so stored ones that are off do not make a key invalid
    pytest.param(_pkcs1(dp=_N.dmp1 + 2, qinv=_N.iqmp + 1), rsa.RSAPrivateKey, id="rsa-stored-crt-values-off"),
    pytest.param(_ec(ec.SECP256R1()), ec.EllipticCurvePrivateKey, id="ecdsa-p256"),
    pytest.param(_ec(ec.SECP384R1()), ec.EllipticCurvePrivateKey, id="ecdsa-p384"),
])
def test_a_valid_key_loads_and_signs(tmp_path: Path, data: bytes, kind: type) -> None:
    path = tmp_path / "sa.key"
    path.write_bytes(data)
    key = load_signing_key(path)
    assert isinstance(key, kind)
    assert isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey)
    _signs(key)


@pytest.mark.parametrize(("data", "reason"), [
    pytest.param(_pkcs1(n=_N.public_numbers.n + 2), "crypto/rsa: invalid modulus", id="modulus-not-p-times-q"),
    pytest.param(_pkcs1(d=_N.d + 2), "crypto/rsa: invalid exponents", id="d-not-inverse-of-e"),
    pytest.param(_pkcs1(e=1), "crypto/rsa: public exponent too small", id="exponent-too-small"),
    pytest.param(_pkcs1(e=(1 << 31) + 1), "crypto/rsa: public exponent too large", id="exponent-too-large"),
    pytest.param(b"-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n", "",
                 id="not-der"),
    pytest.param(b"no PEM at all\n", "", id="no-pem"),
    pytest.param(_ec(ec.SECP256K1()), "neither an RSA nor an ECDSA", id="curve-kube-refuses"),
])
def test_an_invalid_key_file_stops_the_server(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "sa.key"
    path.write_bytes(data)
    with pytest.raises(KeyFileError) as raised:
        load_signing_key(path)
    assert str(path) in str(raised.value)
    assert reason in str(raised.value)


def test_a_missing_key_file_stops_the_server(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="failed to parse service-account-issuer-key-file"):
        load_signing_key(tmp_path / "absent.key")
