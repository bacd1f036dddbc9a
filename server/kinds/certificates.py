"""certificates.k8s.io/v1 CertificateSigningRequest (csr) with /status and /approval, as kube-apiserver 1.28 serves
it (pkg/registry/certificates/certificates/strategy.go, pkg/apis/certificates/validation).

Who asks is recorded, never claimed: on create spec.username, uid, groups and extra are the caller's, and the
status starts empty. Approving or denying is a condition written through /approval (`kubectl certificate
approve` appends {type: Approved, status: "True", reason: KubectlApprove}); a request is never both:

    status.conditions: Invalid value: [...]: Approved and Denied conditions are mutually exclusive

The certificate itself is written through /status by a signer (server/controllers/csrsigning.py signs
`kubernetes.io/kube-apiserver-client` requests with the cluster CA). Beyond RBAC's
`certificatesigningrequests/approval` and `/status` permissions, kube's CSR admission plugins
(server/admission/certificates.py) ask for `approve` or `sign` on the request's signer and refuse
kube-apiserver-client requests for system:masters.
"""

from __future__ import annotations

import base64
import json

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from capstan.api.certificates.v1 import certificates_pb2
from server.auth import caller
from server.kinds.shaped import retype
from server.machinery import meta
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _text
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

GROUP = "certificates.k8s.io"
APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
CONDITION_STATUSES = ("True", "False", "Unknown")
MIN_EXPIRATION_SECONDS = 600
# allValidUsages, sorted as sets.String lists them.
USAGES = tuple(sorted((
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
    "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc")))
PEM_TYPE_ERROR = "PEM block type must be CERTIFICATE REQUEST"
SCHEMA = ProtoSchema(certificates_pb2.CertificateSigningRequest)


def _bytes(value: object) -> bytes:
    """A []byte field's JSON form (base64) decoded; b"" when absent or not base64."""
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except ValueError:
        return b""


def conditions(obj: Obj) -> list[Obj]:
    return [_dict(c) for c in _list(_dict(obj.get("status")).get("conditions"))]


def has_condition(obj: Obj, kind: str) -> bool:
    return any(c.get("type") == kind for c in conditions(obj))


# -- strategies ----------------------------------------------------------------------------------------------------


def prepare_csr(obj: Obj, old: Obj | None) -> None:
    """PrepareForCreate: the requester is the caller, the status starts with no conditions. PrepareForUpdate: the
    status stays as stored (the core keeps it; conditions change through /approval, the rest through /status)."""
    if old is not None:
        return
    spec = obj.setdefault("spec", {})
    for field in ("username", "uid", "groups", "extra"):
        spec.pop(field, None)
    user = caller.current().user
    spec["username"], spec["uid"], spec["groups"] = user.name, user.uid, list(user.groups)
    if user.extra:
        spec["extra"] = user.extra_dict()
    obj["status"] = {}
    retype(SCHEMA, obj)


def _timestamps(new: Obj, old: Obj) -> None:
    """populateConditionTimestamps: a missing lastUpdateTime is now; a missing lastTransitionTime is the stored
    condition's of the same type and status, else now."""
    now = meta.now()
    for condition in conditions(new):
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            same = (c.get("lastTransitionTime") for c in conditions(old)
                    if c.get("type") == condition.get("type") and c.get("status") == condition.get("status"))
            condition["lastTransitionTime"] = next((t for t in same if t), now)


def prepare_approval(new: Obj, old: Obj) -> None:
    """csrApprovalStrategy.PrepareForUpdate: only the conditions change (the core took them alone)."""
    _timestamps(new, old)


def prepare_status(new: Obj, old: Obj) -> None:
    """csrStatusStrategy.PrepareForUpdate: Approved and Denied conditions are /approval's, kept as stored."""
    kept = [c for c in conditions(old) if c.get("type") in (APPROVED, DENIED)]
    others = [c for c in conditions(new) if c.get("type") not in (APPROVED, DENIED)]
    status = new.setdefault("status", {})
    if kept or others:
        status["conditions"] = kept + others
    else:
        status.pop("conditions", None)
    _timestamps(new, old)


# -- validation ----------------------------------------------------------------------------------------------------


def _request_error(request: bytes) -> str:
    """validateCSR: one PEM CERTIFICATE REQUEST block whose signature checks; "" when it does."""
    text = request.decode("ascii", "replace")
    begin = "-----BEGIN CERTIFICATE REQUEST-----"
    if begin not in text or text.lstrip().find("-----BEGIN ") != text.lstrip().find(begin):
        return PEM_TYPE_ERROR
    try:
        csr = x509.load_pem_x509_csr(request)
    except ValueError as err:
        return f"asn1: {err}"
    try:
        return "" if csr.is_signature_valid else "x509: ECDSA verification failure"
    except (InvalidSignature, ValueError):
        return "x509: ECDSA verification failure"


def signer_name_errors(name: str, path: str) -> list[FieldError]:
    """core validation's ValidateSignerName: <domain with two labels or more>/<DNS subdomain path>."""
    if not name:
        return [FieldError.required(path)]
    segments = name.split("/")
    if len(segments) != 2:
        return [FieldError.invalid(path, name, "must be a fully qualified domain and path of the form "
                                               "'example.com/signer-name'")]
    domain, rest = segments
    errs: list[FieldError] = []
    if len(domain) > names.DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(FieldError.too_long(path, names.DNS1123_SUBDOMAIN_MAX_LENGTH))
    labels = domain.split(".")
    for label in labels:
        problems = names.is_dns1123_label(label)
        if problems:
            errs.extend(FieldError.invalid(path, domain, f"validating label {names.go_quote(label)}: {p}")
                        for p in problems)
            break
    if len(labels) < 2:
        errs.append(FieldError.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    if len(rest) > names.DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(FieldError.too_long(path, names.DNS1123_SUBDOMAIN_MAX_LENGTH))
    errs.extend(FieldError.invalid(path, rest, p) for p in names.is_dns1123_subdomain(rest))
    return errs


def _condition_errors(obj: Obj) -> list[FieldError]:
    """validateConditions with v1's options: a type, a known status, Approved and Denied only True, no type twice,
    never both Approved and Denied."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(conditions(obj)):
        at = f"status.conditions[{i}]"
        kind, status = _text(condition.get("type")), _text(condition.get("status"))
        if not kind:
            errs.append(FieldError.required(f"{at}.type"))
        if status not in CONDITION_STATUSES:
            errs.append(FieldError.not_supported(f"{at}.status", status, CONDITION_STATUSES))
        if kind in (APPROVED, DENIED):
            approved, denied = approved or kind == APPROVED, denied or kind == DENIED
            if status != "True":
                errs.append(FieldError.invalid(f"{at}.status", status, f"{kind} condition may only be set to True"))
        if kind in seen:
            errs.append(FieldError.duplicate(f"{at}.type", kind))
        seen.add(kind)
    if approved and denied:
        shown = GoValue(json.dumps(conditions(obj), separators=(",", ":")))
        errs.append(FieldError.invalid("status.conditions", shown,
                                       "Approved and Denied conditions are mutually exclusive"))
    return errs


def _certificate_error(certificate: bytes) -> str:
    """validateCertificate: PEM CERTIFICATE blocks only, at least one, each parseable."""
    if not certificate:
        return ""
    text = certificate.decode("ascii", "replace")
    if "-----BEGIN CERTIFICATE-----" not in text:
        return "must contain at least one CERTIFICATE PEM block"
    try:
        x509.load_pem_x509_certificates(certificate)
    except ValueError as err:
        return f"x509: {err}"
    return ""


def validate_csr(obj: Obj, old: Obj | None) -> list[FieldError]:
    """validateCertificateSigningRequest, then on update (every path: the main resource, /status, /approval) the
    conditions that may not go and the certificate that may not change."""
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    request = _bytes(spec.get("request"))
    problem = _request_error(request)
    if problem:  # an absent request is Go's nil slice, an empty one []byte{}
        shown = names.go_bytes(request) if spec.get("request") is not None else names.GoValue("[]byte(nil)")
        errs.append(FieldError.invalid("spec.request", shown, problem))
    usages = _list(spec.get("usages"))
    old_usages = set(_list(_dict(old.get("spec")).get("usages"))) if old is not None else set()
    if not usages:
        errs.append(FieldError.required("spec.usages"))
    errs.extend(FieldError.not_supported(f"spec.usages[{i}]", u, USAGES)
                for i, u in enumerate(usages) if u not in USAGES and u not in old_usages)
    seen: set[str] = set()
    for i, usage in enumerate(usages):
        if usage in seen:
            errs.append(FieldError.duplicate(f"spec.usages[{i}]", usage))
        seen.add(usage)
    signer = _text(spec.get("signerName"))
    if signer == "kubernetes.io/legacy-unknown":
        errs.append(FieldError.invalid("spec.signerName", signer,
                                       "the legacy signerName is not allowed via this API version"))
    else:
        errs += signer_name_errors(signer, "spec.signerName")
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, int) and seconds < MIN_EXPIRATION_SECONDS:
        errs.append(FieldError.invalid("spec.expirationSeconds", seconds,
                                       "may not specify a duration less than 600 seconds (10 minutes)"))
    errs += _condition_errors(obj)
    certificate = _bytes(_dict(obj.get("status")).get("certificate"))
    problem = _certificate_error(certificate)
    if problem:
        errs.append(FieldError.invalid("status.certificate", "<certificate data>", problem))
    if old is not None:
        for kind in (APPROVED, DENIED, FAILED):
            if sum(c.get("type") == kind for c in conditions(obj)) < sum(c.get("type") == kind
                                                                         for c in conditions(old)):
                errs.append(FieldError.forbidden("status.conditions",
                                                 f"updates may not remove a condition of type {names.go_quote(kind)}"))
        old_certificate = _bytes(_dict(old.get("status")).get("certificate"))
        if old_certificate and certificate != old_certificate:
            errs.append(FieldError.invalid("status.certificate", "<certificate data>",
                                           "updates may not modify a certificate"))
    return errs


def _any_name(name: str, prefix: bool) -> list[str]:
    """ValidateCertificateRequestName: "We don't care what you call your certificate requests"."""
    return []


CERTIFICATE_SIGNING_REQUESTS = Resource(
    group=GROUP, version="v1", resource="certificatesigningrequests", kind="CertificateSigningRequest",
    singular="certificatesigningrequest", namespaced=False, schema=SCHEMA, short_names=("csr",),
    subresources=(
        # Both strategies keep the request's metadata (ResetFields: spec, and the other half of status).
        Subresource("status", "CertificateSigningRequest", ("get", "patch", "update"), ("status",),
                    metadata_reset=(), prepare=prepare_status),
        Subresource("approval", "CertificateSigningRequest", ("get", "patch", "update"), ("status", "conditions"),
                    metadata_reset=(), prepare=prepare_approval),
    ),
    field_getters={"spec.signerName": lambda obj: _text(_dict(obj.get("spec")).get("signerName"))},
    strategy=Declared(name_rule=_any_name, prepare=prepare_csr, validation=validate_csr),
)

KINDS = (CERTIFICATE_SIGNING_REQUESTS,)
