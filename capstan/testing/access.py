"""Who a test talks to the cluster as: clients from a kubeconfig, throwaway namespaces, and ServiceAccounts and
users holding exactly the RBAC rules a test names, so it can assert what an operator's account may and may not do.

Everything goes through the public API (TokenRequest, CertificateSigningRequest, RBAC objects), so it works on
a real cluster as on Capstan. Each kubeconfig made keeps the admin kubeconfig's cluster entry (server, CA) and
carries the new identity's credential instead of the admin's.
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from kubernetes import client, config

from capstan.testing.rest import Obj, request
from capstan.testing.server import write_private

Rule = Obj  # an rbac.authorization.k8s.io/v1 PolicyRule as YAML spells it: apiGroups, resources, verbs
CREDENTIAL_SECONDS = 3600  # a token's or a client certificate's lifetime: longer than any test
ISSUE_TIMEOUT = 30.0  # seconds for the signer to issue an approved CSR's certificate
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
RBAC = "rbac.authorization.k8s.io"


def api_client(kubeconfig: Path) -> client.ApiClient:
    """A client for the kubeconfig's current context; the kubernetes package's global configuration is untouched."""
    # persist_config=False: a refreshed credential (an exec plugin's) is never written back into the user's file
    made: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), persist_config=False)
    return made


def namespace_name(hint: str) -> str:
    """A fresh DNS label from `hint` (a test's name): lowercased, other characters dashed, a random suffix."""
    stem = re.sub(r"[^a-z0-9]+", "-", hint.lower()).strip("-")[:40].strip("-") or "test"
    return f"{stem}-{secrets.token_hex(3)}"


def create(api: client.ApiClient, collection: str, obj: Obj) -> str:
    """POSTs `obj` into `collection`; the made object's path."""
    request(api, "POST", collection, body=obj)
    return f"{collection}/{obj['metadata']['name']}"


def delete(api: client.ApiClient, paths: Iterable[str]) -> None:
    """Deletes each path in turn, taking 404 as done: cleanup after a test that already removed what it made."""
    for path in paths:
        try:
            request(api, "DELETE", path)
        except client.ApiException as err:
            if err.status != 404:
                raise


@dataclass(frozen=True)
class Access:
    """Who a test acts as (a ServiceAccount or a user) and its credentials: a kubeconfig and a client from it."""

    username: str
    groups: tuple[str, ...]
    kubeconfig: Path
    token: str | None  # a ServiceAccount's bound token; a user has a client certificate in its kubeconfig
    made: tuple[str, ...] = field(repr=False, compare=False)  # the paths of what was made, last first

    def api_client(self) -> client.ApiClient:
        return api_client(self.kubeconfig)


def service_account(api: client.ApiClient, admin_kubeconfig: Path, directory: Path, name: str, *, namespace: str,
                    rules: Sequence[Rule] = (), cluster_rules: Sequence[Rule] = ()) -> Access:
    """Creates the ServiceAccount, grants it `rules` in `namespace` and `cluster_rules` cluster-wide (bind), and
    writes a kubeconfig with a TokenRequest token. Should a step fail, what was made is deleted first."""
    made: list[str] = []
    in_namespace = f"/api/v1/namespaces/{namespace}"
    try:
        made.append(create(api, f"{in_namespace}/serviceaccounts", {"metadata": {"name": name}}))
        made += bind(api, {"kind": "ServiceAccount", "name": name, "namespace": namespace}, name,
                     namespace=namespace, rules=rules, cluster_rules=cluster_rules)
        answer = request(api, "POST", f"{in_namespace}/serviceaccounts/{name}/token", body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": CREDENTIAL_SECONDS}})
    except BaseException:
        delete(api, reversed(made))
        raise
    username = f"system:serviceaccount:{namespace}:{name}"
    token: str = answer["status"]["token"]
    access = Access(username, ("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
                    directory / f"{namespace}-{name}.kubeconfig", token, tuple(reversed(made)))
    write_private(access.kubeconfig, credential_kubeconfig(admin_kubeconfig, username, {"token": token}))
    return access


def user(api: client.ApiClient, admin_kubeconfig: Path, directory: Path, name: str, *, groups: Sequence[str] = (),
         namespace: str | None = None, rules: Sequence[Rule] = (), cluster_rules: Sequence[Rule] = ()) -> Access:
    """A user with a client certificate (CN `name`, an O per group) issued through the certificates API — a
    CertificateSigningRequest for kubernetes.io/kube-apiserver-client, approved as admin and signed by the
    cluster's signer, as on any cluster — granted `rules` in `namespace` and `cluster_rules` cluster-wide."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name),
                         *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups)])
    pem = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256()).public_bytes(
        serialization.Encoding.PEM)
    csr_name = namespace_name(f"capstan-test-{name}")
    csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    made: list[str] = []
    try:
        made.append(create(api, csrs, {"metadata": {"name": csr_name}, "spec": {
            "request": base64.b64encode(pem).decode(), "signerName": CLIENT_SIGNER,
            "expirationSeconds": CREDENTIAL_SECONDS, "usages": ["digital signature", "client auth"]}}))
        csr = request(api, "GET", f"{csrs}/{csr_name}")
        csr.setdefault("status", {})["conditions"] = [{
            "type": "Approved", "status": "True", "reason": "CapstanTest", "message": "approved for a test"}]
        request(api, "PUT", f"{csrs}/{csr_name}/approval", body=csr)
        certificate = _issued(api, f"{csrs}/{csr_name}")
        if namespace is not None or cluster_rules:
            made += bind(api, {"kind": "User", "apiGroup": RBAC, "name": name}, csr_name,
                         namespace=namespace, rules=rules if namespace is not None else (),
                         cluster_rules=cluster_rules)
    except BaseException:
        delete(api, reversed(made))
        raise
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    access = Access(name, tuple(groups), directory / f"user-{csr_name}.kubeconfig", None, tuple(reversed(made)))
    write_private(access.kubeconfig, credential_kubeconfig(admin_kubeconfig, name, {
        "client-certificate-data": certificate, "client-key-data": base64.b64encode(key_pem).decode()}))
    return access


def _issued(api: client.ApiClient, path: str) -> str:
    """The CSR's certificate (base64 PEM, as kubeconfig wants it) once the signer has issued it."""
    deadline = time.monotonic() + ISSUE_TIMEOUT
    while time.monotonic() < deadline:
        certificate = (request(api, "GET", path).get("status") or {}).get("certificate")
        if certificate:
            return str(certificate)
        time.sleep(0.05)
    raise TimeoutError(f"{path}: approved, but no certificate was issued within {ISSUE_TIMEOUT:g} s")


def bind(api: client.ApiClient, subject: Obj, name: str, *, namespace: str | None, rules: Sequence[Rule],
         cluster_rules: Sequence[Rule]) -> list[str]:
    """A Role with `rules` in `namespace` and a ClusterRole with `cluster_rules`, each bound to `subject`; the
    paths made, in order. Cluster-wide names carry the namespace, so tests in parallel never collide."""
    made: list[str] = []
    kinds = []
    if rules and namespace is not None:
        kinds.append(("Role", f"/apis/{RBAC}/v1/namespaces/{namespace}", name, rules))
    if cluster_rules:
        kinds.append(("ClusterRole", f"/apis/{RBAC}/v1", f"capstan-test:{namespace or 'cluster'}:{name}",
                      cluster_rules))
    for kind, prefix, role, granted in kinds:
        plural = kind.lower() + "s"
        made.append(create(api, f"{prefix}/{plural}", {"metadata": {"name": role}, "rules": list(granted)}))
        made.append(create(api, f"{prefix}/{plural.replace('roles', 'rolebindings')}", {
            "metadata": {"name": role}, "subjects": [subject],
            "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role}}))
    return made


def credential_kubeconfig(admin_kubeconfig: Path, user: str, credential: dict[str, str]) -> str:
    """A kubeconfig with the admin kubeconfig's current cluster (a relative CA path made absolute) and
    `credential` (kubeconfig's user fields: a token, or a client certificate and key)."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    context_name = admin.get("current-context")
    context = next(c["context"] for c in admin["contexts"] if c["name"] == context_name)
    cluster = dict(next(c["cluster"] for c in admin["clusters"] if c["name"] == context["cluster"]))
    if "certificate-authority" in cluster:
        cluster["certificate-authority"] = str((admin_kubeconfig.parent / cluster["certificate-authority"]).resolve())
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": user,
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": user, "user": credential}],
        "contexts": [{"name": user, "context": {"cluster": "cluster", "user": user}}],
    }, sort_keys=False)
