"""The HTTPS listener names the client CAs it accepts, as kube-apiserver's does.

Go's TLS server lists the subjects of its client CA pool in the CertificateRequest (certificate_authorities), so
that a client holding several certificates presents one the server trusts, and `openssl s_client` shows them as
"Acceptable client certificate CA names" (kube's own test-cmd checks for them before testing client
certificates). OpenSSL sends that list only when it is set on the SSL_CTX, and Python's ssl module has no call
for it; this module makes the one OpenSSL call through ctypes, on the SSL_CTX inside an ssl.SSLContext.

Contract: `advertise(context, pem)` adds the subject of every certificate in `pem`, in order, and returns True;
where the interpreter's layout is not the one known here (not CPython 3.11 to 3.14) or the call does not take, it
changes nothing and returns False: the listener then verifies client certificates as before and only the
names are missing. OpenSSL's error queue is left empty either way.
"""

from __future__ import annotations

import ctypes
import ssl
import sys
from functools import cache
from typing import Any

_SSL_VERIFY_PEER = 1


@cache
def _libssl() -> Any | None:
    """The OpenSSL the ssl module is linked with, or None."""
    module = getattr(sys.modules.get("_ssl"), "__file__", None)
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 14) or not module:
        return None
    try:
        lib = ctypes.CDLL(module)  # its symbols resolve through _ssl's own libssl and libcrypto
        functions = {
            "BIO_new_mem_buf": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]),
            "BIO_free": (ctypes.c_int, [ctypes.c_void_p]),
            "PEM_read_bio_X509": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                    ctypes.c_void_p]),
            "X509_free": (None, [ctypes.c_void_p]),
            "SSL_CTX_add_client_CA": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
            "SSL_CTX_get_verify_mode": (ctypes.c_int, [ctypes.c_void_p]),
            "ERR_clear_error": (None, []),
        }
        for name, (restype, argtypes) in functions.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
    except (OSError, AttributeError):
        return None
    return lib


def _ssl_ctx(context: ssl.SSLContext) -> int:
    """The SSL_CTX pointer: CPython's PySSLContext holds it first, right after the object header."""
    return ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value or 0


def advertise(context: ssl.SSLContext, pem: bytes) -> bool:
    """Name the subjects of the certificates in `pem` as the client CAs `context` accepts (see the contract)."""
    lib = _libssl()
    if lib is None or not pem:
        return False
    ctx = _ssl_ctx(context)
    expected = _SSL_VERIFY_PEER if context.verify_mode != ssl.CERT_NONE else 0
    if not ctx or lib.SSL_CTX_get_verify_mode(ctx) & _SSL_VERIFY_PEER != expected:
        return False  # not the SSL_CTX this context configures: leave it alone
    bio = lib.BIO_new_mem_buf(pem, len(pem))
    added = 0
    try:
        while bio:
            certificate = lib.PEM_read_bio_X509(bio, None, None, None)
            if not certificate:
                break  # the end of the bundle (or text that is no certificate, which verification skips too)
            try:
                added += lib.SSL_CTX_add_client_CA(ctx, certificate) == 1
            finally:
                lib.X509_free(certificate)
    finally:
        if bio:
            lib.BIO_free(bio)
        lib.ERR_clear_error()  # reading to the bundle's end queues an error the ssl module must not see
    return added > 0
