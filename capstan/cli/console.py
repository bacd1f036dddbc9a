"""`capstan console`: a one-time login URL for the web console (gateway/console/), for the server's admin.

The admin's credential is a client certificate (capstan/cli/pki.py), which a browser cannot be handed in a URL,
so the command, as the admin: applies ServiceAccount kube-system/capstan-console and a ClusterRoleBinding of it
to cluster-admin (idempotent; fieldManager capstan-console), asks the TokenRequest API for a token of it, and
registers that token at POST /console/codes for a one-time code. The URL carries the code in its fragment
(never sent to the server, never in a log); the page trades it once, by POST, for the token. The browser then
acts as system:serviceaccount:kube-system:capstan-console, and the token expires after --expiration.

An --insecure server needs no login (it trusts every caller): the URL is the console's address alone.
"""

from __future__ import annotations

import argparse
import json
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capstan.cli import kubeconfig, pki

if TYPE_CHECKING:
    import aiohttp

NAMESPACE = "kube-system"
NAME = "capstan-console"
MANAGER = "capstan-console"
APPLY = "application/apply-patch+yaml"


class ConsoleError(RuntimeError):
    """A step the server refused: the message says which and what it answered."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=Path("data"),
                        help="the server's data directory, to find its address and the admin's certificate")
    parser.add_argument("--server", default="", help="the server's address, e.g. https://127.0.0.1:6443")
    parser.add_argument("--expiration", type=int, default=3600,
                        help="seconds the console's token lives (TokenRequest expirationSeconds, at least 600)")


async def login_url(data_dir: Path, server: str = "", expiration: int = 3600) -> str:
    """The console's one-time login URL (this module's docstring says how it is made)."""
    import aiohttp  # here: `capstan --help` builds this command's flags without an HTTP client

    try:
        endpoints: dict[str, str] = json.loads((data_dir / kubeconfig.ENDPOINTS_FILE).read_text())
    except (OSError, ValueError) as err:
        raise ConsoleError(f"no running server's endpoints in {data_dir}: {err}") from err
    if "https" not in endpoints:
        return f"{(server or endpoints['http']).rstrip('/')}/console/"
    base = (server or endpoints["https"]).rstrip("/")
    certs = pki.CertDir(Path(endpoints.get("cert-dir") or data_dir / "pki"))
    trust = ssl.create_default_context(cafile=endpoints.get("ca") or None)
    admin = ssl.create_default_context(cafile=endpoints.get("ca") or None)
    admin.load_cert_chain(certs.admin_cert, certs.admin_key)
    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(ssl=admin)) as session:
        await _apply(session, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{NAME}",
                     {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": NAMESPACE}})
        await _apply(session, f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{NAME}", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]})
        issued = await _call(session, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{NAME}/token",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                              "spec": {"expirationSeconds": expiration}}, "application/json")
    token = issued["status"]["token"]
    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(ssl=trust),
                                     headers={"Authorization": f"Bearer {token}"}) as session:
        registered = await _call(session, "POST", "/console/codes", {}, "application/json")
    return f"{base}/console/#code={registered['code']}"


async def _apply(session: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> None:
    await _call(session, "PATCH", f"{path}?fieldManager={MANAGER}&force=true", body, APPLY)


async def _call(session: aiohttp.ClientSession, method: str, path: str, body: dict[str, Any],
                content_type: str) -> dict[str, Any]:
    async with session.request(method, path, data=json.dumps(body), headers={"Content-Type": content_type}) as resp:
        answer: dict[str, Any] = await resp.json(content_type=None)
        if resp.status >= 300:
            raise ConsoleError(f"{method} {path.partition('?')[0]}: {resp.status} {answer.get('message', answer)}")
        return answer
