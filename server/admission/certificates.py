"""kube-apiserver 1.28's CertificateSigningRequest admission plugins (plugin/pkg/admission/certificates), so that
RBAC on `certificatesigningrequests/approval` and `/status` is not enough to approve or sign for any signer:

- CertificateApproval: an UPDATE through /approval needs `approve` on the CSR's signer (below);
- CertificateSigning: an UPDATE through /status that changes status.certificate or status.conditions needs
  `sign` on the CSR's signer; one that changes neither needs nothing more;
- CertificateSubjectRestriction: a CREATE of a `kubernetes.io/kube-apiserver-client` request whose subject's
  organizations include system:masters is refused (such a certificate would be cluster-admin).

A signer permission is asked of the request's authorizer (server.auth.caller) as kube's
IsAuthorizedForSignerName asks it: verb `approve` or `sign` on resource `signers` of certificates.k8s.io, API
version "*", named the signerName, then named `<domain>/*` (the signer's domain, its name up to the first "/").
Refusals are kube's 403s, worded as admission.NewForbidden words them:

    certificatesigningrequests.certificates.k8s.io "NAME" is forbidden: user not permitted to approve requests
    with signerName "example.com/signer"

The core's own controllers call as SYSTEM under AlwaysAllow, so the built-in signer keeps signing. Every step
returns at once for any other resource, so other kinds pay nothing.
"""

from __future__ import annotations

import base64
import logging
import re

from cryptography import x509
from cryptography.x509.oid import NameOID

from server.admission import Plugin
from server.auth import caller
from server.auth.attributes import Attributes as AuthzAttributes
from server.auth.attributes import Decision
from server.auth.authorizer import decide
from server.kinds.certificates import GROUP, conditions
from server.machinery import errors
from server.machinery.validation.names import go_quote
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import text_of as _text
from server.objects.admitting import Attributes
from server.objects.context import Context

APPROVAL, SIGNING, SUBJECT_RESTRICTION = "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"
RESOURCE = "certificatesigningrequests"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
MASTERS = "system:masters"
_UPDATE, _CREATE = frozenset(("UPDATE",)), frozenset(("CREATE",))
_PEM_BEGIN = re.compile(r"-----BEGIN ([^-\r\n]*)-----")

log = logging.getLogger(__name__)


def _is_csr(attrs: Attributes) -> bool:
    return attrs.resource.group == GROUP and attrs.resource.resource == RESOURCE


def _forbidden(attrs: Attributes, reason: str) -> errors.ApiError:
    return errors.forbidden(RESOURCE, GROUP, attrs.name, reason)


def _csr(attrs: Attributes, obj: Obj | None) -> Obj:
    """The object as a CSR, or kube's refusal of an object of another type (none: Go's %T of nil)."""
    if obj is None:
        raise _forbidden(attrs, "expected type CertificateSigningRequest, got: <nil>")
    return obj


def _signer(csr: Obj) -> str:
    return _text(_dict(csr.get("spec")).get("signerName"))


async def _allowed(verb: str, name: str) -> bool:
    who = caller.current()
    wanted = AuthzAttributes(who.user, verb, api_group=GROUP, api_version="*", resource="signers", name=name)
    try:
        decision, _ = await decide(who.authorizer, wanted)
    except Exception as err:  # an authorizer's failure is no permission, as kube logs it and goes on
        log.info("cannot authorize %r %r for policy: %s", verb, name, err)
        return False
    return decision is Decision.ALLOW


async def authorized_for_signer(verb: str, signer_name: str) -> bool:
    """IsAuthorizedForSignerName for the request's user: the signer's own name, then its domain's wildcard."""
    return (await _allowed(verb, signer_name)
            or await _allowed(verb, signer_name.split("/", 1)[0] + "/*"))


async def approve(ctx: Context, attrs: Attributes) -> None:
    """CertificateApproval: /approval writes need `approve` on the stored CSR's signer."""
    if attrs.subresource != "approval" or not _is_csr(attrs):
        return
    signer = _signer(_csr(attrs, attrs.old))
    if not await authorized_for_signer("approve", signer):
        log.debug("user not permitted to approve CertificateSigningRequest %r with signerName %r", attrs.name, signer)
        raise _forbidden(attrs, f"user not permitted to approve requests with signerName {go_quote(signer)}")


def _certificate(csr: Obj) -> bytes | None:
    """status.certificate as bytes (None when absent), as the []byte kube compares."""
    value = _dict(csr.get("status")).get("certificate")
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:  # not base64: compared as written
        return value.encode()


async def sign(ctx: Context, attrs: Attributes) -> None:
    """CertificateSigning: /status writes that change the certificate or the conditions need `sign` on the stored
    CSR's signer (no conditions and an empty list are the same, as kube's semantic equality holds)."""
    if attrs.subresource != "status" or not _is_csr(attrs):
        return
    old, new = _csr(attrs, attrs.old), _csr(attrs, attrs.obj)
    if _certificate(old) == _certificate(new) and conditions(old) == conditions(new):
        return
    signer = _signer(old)
    if not await authorized_for_signer("sign", signer):
        log.debug("user not permitted to sign CertificateSigningRequest %r with signerName %r", attrs.name, signer)
        raise _forbidden(attrs, f"user not permitted to sign requests with signerName {go_quote(signer)}")


def _organizations(request: bytes) -> list[str]:
    """ParseCSR's subject organizations: the first PEM block must be a CERTIFICATE REQUEST (ValueError with
    kube's words otherwise, or the parser's)."""
    text = request.decode("ascii", "replace")
    first = _PEM_BEGIN.search(text)
    if first is None or first.group(1) != "CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    parsed = x509.load_pem_x509_csr(request[first.start():])
    return [str(a.value) for a in parsed.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


async def restrict_subject(ctx: Context, attrs: Attributes) -> None:
    """CertificateSubjectRestriction: no kube-apiserver-client request for the system:masters group."""
    if attrs.subresource or not _is_csr(attrs):
        return
    csr = _csr(attrs, attrs.obj)
    if _signer(csr) != KUBE_APISERVER_CLIENT:
        return
    request = _dict(csr.get("spec")).get("request")
    try:
        pem = base64.b64decode(request, validate=True) if isinstance(request, str) else b""
        organizations = _organizations(pem)
    except ValueError as err:
        raise _forbidden(attrs, f"failed to parse CSR: {err}") from None
    if MASTERS in organizations:
        log.debug("CSR %s rejected by admission plugin %s for attempting to use signer %s with system:masters group",
                  attrs.name, SUBJECT_RESTRICTION, KUBE_APISERVER_CLIENT)
        raise _forbidden(attrs, f"use of {KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed")


def plugins(on: frozenset[str]) -> list[Plugin]:
    """The three plugins that `on` (the enabled plugin names) names."""
    csrs = frozenset({(GROUP, RESOURCE)})
    made = (Plugin(APPROVAL, _UPDATE, validate=approve, resources=csrs),
            Plugin(SIGNING, _UPDATE, validate=sign, resources=csrs),
            Plugin(SUBJECT_RESTRICTION, _CREATE, validate=restrict_subject, resources=csrs))
    return [p for p in made if p.name in on]
