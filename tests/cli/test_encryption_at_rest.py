"""`capstan serve --encryption-provider-config`, as a user runs it: Secrets written over HTTP are encrypted in
the LMDB file (a ConfigMap beside them, not listed, is not: the check would see plaintext), read back after a
restart, /metrics counts them under kube's names, and a KMS v2 provider's plugin (a real gRPC server on a unix
socket, tests/storage/kms_plugin.py, on this test's event loop: the server is started from a thread so the
plugin answers meanwhile) is reported by kube's `kms-providers` health check.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import ClientSession

from tests.cli.test_data_at_rest import start, stop
from tests.cli.test_serve import ROOT
from tests.storage.kms_plugin import KmsPlugin

MARKER = b"PLAINTEXT-MARKER-0815"
SECRETS = "/api/v1/namespaces/default/secrets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
KEY = base64.b64encode(bytes(range(32))).decode()


@pytest.fixture
async def plugin() -> AsyncIterator[KmsPlugin]:
    server = KmsPlugin(Path(f"/tmp/capstan-kms-cli-{os.getpid()}.sock"))
    await server.start()
    yield server
    await server.stop()
    server.socket.unlink(missing_ok=True)


def configuration(provider: str) -> str:
    return ("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            f"- resources: [secrets]\n  providers:\n  - {provider}\n  - identity: {{}}\n")


@pytest.mark.parametrize("provider", ["aescbc", "aesgcm", "secretbox", "kms"])
async def test_secrets_are_encrypted_in_the_data_file(tmp_path: Path, plugin: KmsPlugin, provider: str) -> None:
    spec = (f"kms: {{apiVersion: v2, name: test, endpoint: '{plugin.endpoint}'}}" if provider == "kms"
            else f"{provider}: {{keys: [{{name: k1, secret: {KEY}}}]}}")
    config = tmp_path / "encryption.yaml"
    config.write_text(configuration(spec))
    data = tmp_path / "data"
    proc, port = await asyncio.to_thread(start, data, "--encryption-provider-config", str(config))
    url = f"http://127.0.0.1:{port}"
    value = base64.b64encode(MARKER).decode()
    try:
        async with ClientSession() as http:
            secret = {"metadata": {"name": "db"}, "data": {"password": value}}
            async with http.post(url + SECRETS, json=secret) as response:
                assert response.status == 201, await response.text()
            configmap = {"metadata": {"name": "plain"}, "data": {"note": MARKER.decode()}}
            async with http.post(url + CONFIGMAPS, json=configmap) as response:
                assert response.status == 201, await response.text()
            async with http.get(url + SECRETS + "/db") as response:
                assert (await response.json())["data"] == {"password": value}
            async with http.get(url + "/readyz?verbose") as response:
                text = await response.text()
                assert response.status == 200, text
                assert ("[+]kms-providers ok" in text) is (provider == "kms")
            if provider == "kms":
                async with http.get(url + "/healthz/kms-providers") as response:
                    assert (response.status, await response.text()) == (200, "ok")
            async with http.get(url + "/metrics") as response:
                metrics = await response.text()
            prefix = f"k8s:enc:{provider}:{'v2:test' if provider == 'kms' else 'v1:k1'}:"
            assert ('apiserver_storage_transformation_operations_total{status="OK",transformation_type="to_storage",'
                    f'transformer_prefix="{prefix}"}} 1.0') in metrics
    finally:
        await stop(proc)
    raw = (data / "lmdb" / "data.mdb").read_bytes()
    assert raw.count(MARKER) >= 1  # the ConfigMap: plaintext, as configured
    assert value.encode() not in raw  # the Secret's data: nowhere in the file
    assert prefix.encode() in raw
    proc, port = await asyncio.to_thread(start, data, "--encryption-provider-config", str(config))  # restarted
    try:
        async with ClientSession() as http, http.get(f"http://127.0.0.1:{port}{SECRETS}/db") as response:
            assert (await response.json())["data"] == {"password": value}
    finally:
        await stop(proc)


@pytest.mark.parametrize(("flags", "message"), [
    (("--encryption-provider-config", "{config}"),
     'resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected'
     " length, got 5, expected one of [16 24 32]"),
    (("--encryption-provider-config", "{missing}"), "error reading encryption provider configuration file"),
    (("--encryption-provider-config-automatic-reload",),
     "--encryption-provider-config-automatic-reload must be set with --encryption-provider-config"),
], ids=["invalid", "missing", "reload-alone"])
def test_a_configuration_that_cannot_serve_refuses_to_start(tmp_path: Path, flags: tuple[str, ...],
                                                           message: str) -> None:
    config = tmp_path / "encryption.yaml"
    config.write_text(configuration("aesgcm: {keys: [{name: k1, secret: c2hvcnQ=}]}"))
    argv = [flag.format(config=config, missing=tmp_path / "none.yaml") for flag in flags]
    done = subprocess.run(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(tmp_path / "data"),
         "--http-port", "0", "--grpc-port", "0", *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert message in done.stderr


async def test_automatic_reload_takes_a_new_first_provider(tmp_path: Path) -> None:
    config = tmp_path / "encryption.yaml"
    config.write_text(configuration(f"aesgcm: {{keys: [{{name: k1, secret: {KEY}}}]}}"))
    data = tmp_path / "data"
    proc, port = await asyncio.to_thread(start, data, "--encryption-provider-config", str(config),
                                         "--encryption-provider-config-automatic-reload")
    url = f"http://127.0.0.1:{port}"
    try:
        async with ClientSession() as http:
            async with http.get(url + "/readyz?verbose") as response:
                assert "[+]kms-providers ok" in await response.text()  # always there when reloading
            async with http.post(url + SECRETS, json={"metadata": {"name": "old"}}) as response:
                assert response.status == 201
            config.write_text(configuration(f"secretbox: {{keys: [{{name: box, secret: {KEY}}}]}}\n"
                                            f"  - aesgcm: {{keys: [{{name: k1, secret: {KEY}}}]}}"))
            await asyncio.sleep(3)  # the file is checked every second
            async with http.post(url + SECRETS, json={"metadata": {"name": "new"}}) as response:
                assert response.status == 201
            async with http.get(url + SECRETS) as response:
                assert sorted(item["metadata"]["name"] for item in (await response.json())["items"]) == ["new", "old"]
    finally:
        await stop(proc)
    raw = (data / "lmdb" / "data.mdb").read_bytes()
    assert b"k8s:enc:aesgcm:v1:k1:" in raw and b"k8s:enc:secretbox:v1:box:" in raw
