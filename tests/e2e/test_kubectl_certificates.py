"""The CertificateSigningRequest flow with the real kubectl against a secure `capstan serve`: a key and request made
with `cryptography`, `kubectl apply`, `kubectl get csr` (Pending, then Approved,Issued), `kubectl certificate
approve` through /approval, the certificate the signer issued with the cert dir's CA, and that certificate
authenticating its CN as the user and its O as the groups (RBAC lets group devs list pods in team, nothing else).
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.e2e import test_security
from tests.e2e.test_security import Secure, forbidden

secure = test_security.secure  # test_security's secure server, as this module's fixture

VERSION = "1.28"


def _csr_manifest(name: str, request: bytes) -> str:
    return json.dumps({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": base64.b64encode(request).decode(), "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["client auth"], "expirationSeconds": 86400}})


def _get(secure: Secure, path: str, cert: Path, key: Path) -> tuple[int, dict[str, object]]:
    context = ssl.create_default_context(cafile=secure.certs.ca_cert)
    context.load_cert_chain(cert, key)
    try:
        with urllib.request.urlopen(secure.https + path, context=context, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_requested_certificate_is_approved_issued_and_authenticates(secure: Secure, tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devs"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "erin")])
    request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    admin = secure.admin
    applied = admin("apply", "-f", "-", input=_csr_manifest("erin", request.public_bytes(serialization.Encoding.PEM)),
                    version=VERSION)
    assert (applied.code, applied.out) == (0, "certificatesigningrequest.certificates.k8s.io/erin created\n"), applied

    listed = admin("get", "csr", "erin", "--no-headers", version=VERSION)
    assert listed.out.split()[2:] == ["kubernetes.io/kube-apiserver-client", "kubernetes-admin", "24h", "Pending"], (
        listed)

    approve = admin("certificate", "approve", "erin", version=VERSION)
    assert (approve.code, approve.out) == (0, "certificatesigningrequest.certificates.k8s.io/erin approved\n"), approve

    issued = ""
    for _ in range(100):
        issued = admin("get", "csr", "erin", "-o", "jsonpath={.status.certificate}", version=VERSION).out
        if issued:
            break
        time.sleep(0.1)
    assert issued, "the signer never issued the certificate"
    assert admin("get", "csr", "erin", "--no-headers", version=VERSION).out.split()[-1] == "Approved,Issued"
    conditions = json.loads(admin("get", "csr", "erin", "-o", "json", version=VERSION).out)["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [("Approved", "True", "KubectlApprove")]

    cert_file, key_file = tmp_path / "erin.crt", tmp_path / "erin.key"
    cert_file.write_bytes(base64.b64decode(issued))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    code, pods = _get(secure, "/api/v1/namespaces/team/pods", cert_file, key_file)
    assert (code, pods["kind"]) == (200, "PodList")
    code, refused = _get(secure, "/api/v1/namespaces/team/secrets", cert_file, key_file)
    assert (code, refused["message"]) == (403, forbidden("erin", "list", "secrets", "team"))
