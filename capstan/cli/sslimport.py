"""aiohttp imported without parsing the system's CA bundle twice.

When it is imported, aiohttp makes the two client SSL contexts it falls back to (verifying and not), and each
loads OpenSSL's default CA file: ~150 certificates parsed, ~30 ms a context here, a sixth of a server's start.
Capstan's processes never use those two (every client Capstan runs is handed a context of its own), but a
context must be as good as the one it replaces. OpenSSL's default trust has two parts: the CA file, parsed
whole when a context loads it, and the CA directory, where a certificate is looked up by its subject's hash
when a verification needs it. Where that directory is hashed (Debian's /etc/ssl/certs, which
update-ca-certificates builds from the same certificates as the file), pointing the default file at nothing
while aiohttp is imported leaves both contexts trusting the CAs of the directory, found when needed instead of
parsed up front. SSL_CERT_FILE is changed only for that import, and not at all when the directory is not hashed or the
user set it to another file than the default; every context made afterwards loads the file as before.
"""

from __future__ import annotations

import os
import re
import ssl
import sys

_HASHED = re.compile(r"[0-9a-f]{8}\.\d+")  # OpenSSL's <subject hash>.<n> names in a CA directory
_NOTHING = "/nonexistent/capstan-no-default-ca-file"


def import_aiohttp() -> None:
    """Import aiohttp, its fallback contexts finding the default CAs in the CA directory when that is hashed."""
    named = os.environ.get("SSL_CERT_FILE")
    paths = ssl.get_default_verify_paths()
    if "aiohttp" in sys.modules or not _the_default(named, paths.openssl_cafile) or not hashed(paths.capath):
        import aiohttp
        return
    os.environ["SSL_CERT_FILE"] = _NOTHING
    try:
        import aiohttp  # noqa: F401
    finally:
        if named is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = named


def _the_default(named: str | None, default: str) -> bool:
    """Whether SSL_CERT_FILE, as set, names OpenSSL's default CA file anyway (or is not set)."""
    return named is None or os.path.realpath(named) == os.path.realpath(default)


def hashed(directory: str | None) -> bool:
    """Whether `directory` holds certificates by subject hash, as OpenSSL looks them up."""
    if not directory:
        return False
    try:
        with os.scandir(directory) as entries:
            return any(_HASHED.fullmatch(entry.name) for entry in entries)
    except OSError:
        return False
