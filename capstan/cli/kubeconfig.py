"""`capstan kubeconfig`: a kubeconfig naming the server as a client can reach it, with the CA that signed its
certificate and the admin credential (capstan/cli/pki.py), read from what `serve` wrote into the data dir.

Contract: the server is never a wildcard address (a wildcard bind is named 127.0.0.1, which the serving
certificate covers); an --insecure server gets a plain kubeconfig (http, a named user with no credential).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from capstan.cli import pki

ENDPOINTS_FILE = "endpoints.json"  # written into the data dir by `serve`, read by `kubeconfig`
USER = "admin"
CONTEXT = "capstan"


def secure_endpoints(host: str, https_port: int, grpc_port: int, mtls_port: int | None, certs: pki.CertDir, *,
                     generated_serving: bool) -> dict[str, str]:
    endpoints = {"https": f"https://{host}:{https_port}", "grpc": f"{host}:{grpc_port}",
                 "cert-dir": str(certs.path.resolve())}
    if mtls_port is not None:
        endpoints["grpc-mtls"] = f"{host}:{mtls_port}"
    if generated_serving:
        endpoints["ca"] = str(certs.ca_cert.resolve())  # else the user's certificate: the system's trust
    return endpoints


def write_endpoints(data_dir: Path, endpoints: dict[str, str]) -> None:
    path = data_dir / ENDPOINTS_FILE
    temporary = path.with_name(f".{ENDPOINTS_FILE}.{os.getpid()}")
    # Created 0600 like every file of the data dir, so a fresh start has nothing to tighten (or warn about).
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(endpoints) + "\n")
    os.replace(temporary, path)


def render(data_dir: Path, server: str = "") -> str:
    try:
        endpoints: dict[str, str] = json.loads((data_dir / ENDPOINTS_FILE).read_text())
    except (OSError, ValueError):
        endpoints = {}
    certs = pki.CertDir(Path(endpoints.get("cert-dir") or data_dir / "pki"))
    secure = "https" in endpoints or ("http" not in endpoints and certs.admin_cert.exists())
    if not secure:
        return _dump(server or endpoints.get("http") or "http://127.0.0.1:8080", {}, {})
    cluster: dict[str, Any] = {}
    ca = endpoints.get("ca", "" if "https" in endpoints else str(certs.ca_cert))
    if ca:
        cluster["certificate-authority-data"] = _data(Path(ca))
    user = {"client-certificate-data": _data(certs.admin_cert), "client-key-data": _data(certs.admin_key)}
    return _dump(server or endpoints.get("https") or "https://127.0.0.1:6443", cluster, user)


def _data(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _dump(server: str, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    name = USER if user else CONTEXT
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server, **cluster}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": name, "namespace": "default"}}],
        "current-context": CONTEXT,
        "users": [{"name": name, "user": user}],
    }
    import yaml  # here, not at the top: `serve` writes the endpoints file but never a kubeconfig

    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)
