"""Node.js drives the core as its developers would (clients/node/drive.js: @grpc/grpc-js over TLS with a
bearer token, the service from protos/ by @grpc/proto-loader): create in JSON and in protobuf, get as JSON
text, list by selector, a stale update decoded to the Kubernetes Status, watch and delete."""

from __future__ import annotations

import json
import os
import subprocess

from tests.clients.conftest import Secure, tool
from tests.e2e.conftest import ROOT

NODE = ROOT / "clients" / "node"


def test_node_client_does_every_verb(secure: Secure) -> None:
    node = tool("node", "Debian's nodejs runs the Node.js client")
    if not (NODE / "node_modules" / "@grpc" / "grpc-js").is_dir():
        npm = tool("npm", "Debian's npm installs @grpc/grpc-js from clients/node/package-lock.json")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE, check=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    ran = subprocess.run([node, "drive.js"], cwd=NODE, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, env={**os.environ, "CAPSTAN_GRPC": secure.grpc,
                                                        "CAPSTAN_CA": str(secure.ca), "CAPSTAN_TOKEN": secure.token})
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen == {
        "createdJson": {"name": "from-json", "kind": "ConfigMap"},
        "createdProto": {"encoding": "ENCODING_PROTOBUF", "name": "from-proto", "data": {"greeting": "hi"}},
        "getText": {"encoding": "ENCODING_JSON_TEXT", "data": {"greeting": "hello"}},
        "list": {"kind": "ConfigMapList", "names": ["from-json", "from-proto"]},
        "stale": {"grpcCode": 10, "typeUrl": "type.googleapis.com/k8s.io.apimachinery.pkg.apis.meta.v1.Status",
                  "code": 409, "reason": "Conflict",
                  "message": 'Operation cannot be fulfilled on configmaps "from-json": the object has been modified; '
                             "please apply your changes to the latest version and try again"},
        "deleted": {"result": "status", "status": "Success"},
        "watch": [["ADDED", "from-proto"], ["MODIFIED", "from-json"], ["DELETED", "from-proto"]],
    }
