"""aiohttp imported without parsing the CA bundle (capstan/cli/sslimport.py): its fallback contexts load nothing up
front where the default CA directory is hashed, and still verify exactly what that directory trusts; a CA file
the user names other than the default, or a directory that is not hashed, leaves aiohttp's import as it was.

Each case runs in a process of its own (the import happens once a process), against a real HTTPS server whose
certificate a generated CA signed, over aiohttp's default verification (a session given no context)."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from capstan.cli import pki, sslimport
from tests.e2e.conftest import ROOT

CASE = """
import asyncio, json, os, ssl, sys
from capstan.cli import sslimport
sslimport.import_aiohttp()
import aiohttp
from aiohttp import web

cert, key = sys.argv[1:3]
out = {"loaded": aiohttp.connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509"],  # aiohttp's fallback
       "file": os.environ.get("SSL_CERT_FILE"),
       "default": ssl.create_default_context().cert_store_stats()["x509"]}  # a context made afterwards

async def main():
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="ok"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session, session.get(f"https://127.0.0.1:{port}/") as resp:
            out["verified"] = resp.status == 200
    except aiohttp.ClientConnectorCertificateError:
        out["verified"] = False
    finally:
        await runner.cleanup()

asyncio.run(main())
print(json.dumps(out))
"""


def subject_hash(cert: Path) -> str:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to name a certificate by its subject hash (Debian's openssl)")
    return subprocess.run([openssl, "x509", "-hash", "-noout", "-in", str(cert)], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


@pytest.mark.parametrize(("directory", "user_file", "loaded", "verified"), [
    ("hashed, holding the server's CA", "", 0, True),
    ("hashed, holding another CA", "", 0, False),
    ("hashed, holding the server's CA", "the default", 0, True),
    ("empty", "the server's CA", 1, True),
    ("holding the server's CA, not hashed", "", "as a default context", False),
], ids=["hashed directory", "hashed directory without the CA", "SSL_CERT_FILE naming the default",
        "SSL_CERT_FILE naming another file", "unhashed directory"])
def test_aiohttps_fallback_contexts_trust_the_directory_without_parsing_a_bundle(
        tmp_path: Path, directory: str, user_file: str, loaded: int | str, verified: bool) -> None:
    ours = pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.0.0.1")
    other = pki.ensure(tmp_path / "other", bind_address="127.0.0.1", service_ip="10.0.0.1", serving=False)
    trusted = tmp_path / "certs"
    trusted.mkdir()
    if directory.startswith("hashed"):
        ca = ours.ca_cert if "server's" in directory else other.ca_cert
        shutil.copy(ca, trusted / f"{subject_hash(ca)}.0")
    elif directory.startswith("holding"):
        shutil.copy(ours.ca_cert, trusted / "ca.pem")
    env = {key: value for key, value in os.environ.items() if key not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    env["SSL_CERT_DIR"] = str(trusted)
    named = {"": None, "the default": ssl.get_default_verify_paths().openssl_cafile,
             "the server's CA": str(ours.ca_cert)}[user_file]
    if named is not None:
        env["SSL_CERT_FILE"] = named
    ran = subprocess.run([sys.executable, "-c", CASE, str(ours.serving_cert), str(ours.serving_key)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["loaded"] == (out["default"] if loaded == "as a default context" else loaded)
    assert out["verified"] is verified
    assert out["file"] == named  # changed only for the import, if at all


@pytest.mark.parametrize(("names", "expected"), [
    (["0a1b2c3d.0"], True),
    (["ca.pem", "0a1b2c3d.1"], True),
    (["ca.pem", "README"], False),
    ([], False),
    (None, False),
], ids=["a hash link", "a hash link among others", "no hash link", "empty", "missing"])
def test_a_directory_is_hashed_when_it_holds_a_subject_hash_name(tmp_path: Path, names: list[str] | None,
                                                                 expected: bool) -> None:
    directory = tmp_path / "certs"
    if names is not None:
        directory.mkdir()
        for name in names:
            (directory / name).write_text("")
    assert sslimport.hashed(str(directory)) is expected
    assert sslimport.hashed(None) is False
