"""Table columns of certificates.k8s.io CertificateSigningRequests, as kube-apiserver 1.28's
printCertificateSigningRequest prints them: the condition cell is Denied, else Approved, else Pending, then
",Failed" and ",Issued" when they apply (`kubectl get csr` shows "Approved,Issued" once signed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.registry.printing.columns import AGE, NAME
from server.registry.printing.duration import SECOND, human_duration
from server.registry.strategy import Column

# certificatesv1beta1 SwaggerDoc of each column's field.
SIGNER_NAME_DESCRIPTION = (
    "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it "
    "will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    "
    "\"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n"
    "    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\n"
    "Distribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.")
REQUESTOR_DESCRIPTION = "Base64-encoded PKCS#10 CSR data"
DURATION_DESCRIPTION = (
    "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may "
    "issue a certificate with a different validity duration so a client must check the delta between the notBefore "
    "and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree "
    "implementations of the well-known Kubernetes signers will honor this field as long as the requested duration "
    "is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the "
    "Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. "
    "Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. "
    "Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum "
    "is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 "
    "minutes.")
CONDITION_DESCRIPTION = "Conditions applied to the request, such as approval or denial."


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("spec"))


def condition(obj: Obj) -> str:
    """extractCSRStatus."""
    status = _dict(obj.get("status"))
    kinds = {_dict(c).get("type") for c in status.get("conditions") or []}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    if status.get("certificate"):
        text += ",Issued"
    return text


def _signer(obj: Obj) -> str:
    signer = _spec(obj).get("signerName")
    return signer if isinstance(signer, str) and signer else "<none>"


def _requested_duration(obj: Obj) -> str:
    seconds = _spec(obj).get("expirationSeconds")
    return human_duration(seconds * SECOND) if isinstance(seconds, int) else "<none>"


def _requestor(obj: Obj) -> str:
    username = _spec(obj).get("username")
    return username if isinstance(username, str) else ""


CSR_COLUMNS = (
    NAME,
    AGE,
    Column("SignerName", "string", SIGNER_NAME_DESCRIPTION, _signer),
    Column("Requestor", "string", REQUESTOR_DESCRIPTION, _requestor),
    Column("RequestedDuration", "string", DURATION_DESCRIPTION, _requested_duration),
    Column("Condition", "string", CONDITION_DESCRIPTION, condition),
)

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("certificates.k8s.io", "certificatesigningrequests"): CSR_COLUMNS,
}
