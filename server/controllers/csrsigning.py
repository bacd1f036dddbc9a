"""Issuing approved CertificateSigningRequests for the `kubernetes.io/kube-apiserver-client` signer with the cluster
CA, as kube-controller-manager's csrsigning controller does (--cluster-signing-cert-file/--cluster-signing-key-file,
--cluster-signing-duration one year).

A request is signed once it is Approved, not Denied and not Failed, and has no certificate yet: the certificate
carries the request's subject (CN is the user, O the groups, as x509 authentication reads them), its public key
and extensions, the usages asked for, and lasts expirationSeconds (at most a year; never past the CA), backdated
five minutes as kube's signing policy does. Usages beyond client auth, digital signature and key encipherment
mark the request Failed (reason SignerValidationFailure) instead. Certificates are written through /status.

A singleton (server/runtime/election.py): one core signs, the elected one; a leader that starts lists the
requests first (its informer's list), so one approved under a leader that died is signed by the next.
"""

from __future__ import annotations

import base64
import copy
import datetime
import logging
import secrets
from pathlib import Path

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import SecurityConfig
from server.kinds.certificates import APPROVED, DENIED, FAILED, conditions
from server.machinery import errors, meta
from server.machinery.values import Obj
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import Handlers, Informer
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

SIGNER = "kubernetes.io/kube-apiserver-client"
CSRS = core_pb2.ResourcePath(group="certificates.k8s.io", version="v1", resource="certificatesigningrequests")
MANAGER = "kube-controller-manager"
DEFAULT_DURATION = datetime.timedelta(days=365)  # --cluster-signing-duration 8760h
BACKDATE = datetime.timedelta(minutes=5)
SHORT = datetime.timedelta(hours=8)  # shorter lifetimes keep their full length (PermissiveSigningPolicy.Short)
CLIENT_USAGES = ("digital signature", "key encipherment", "client auth")
SigningKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


class SignerError(Exception):
    """The request is not one this signer issues: the message becomes its Failed condition's."""


def usages_error(usages: list[str]) -> str:
    """validAPIServerClientUsages: "" when the usages suit a client certificate."""
    for usage in usages:
        if usage not in CLIENT_USAGES:
            return f"invalid usage for client certificate: {usage}"
    return "" if "client auth" in usages else "missing required usage for client certificate: client auth"


def wants_certificate(csr: Obj) -> bool:
    """Approved, neither denied nor failed, for this signer, and not yet issued."""
    kinds = {c.get("type") for c in conditions(csr) if c.get("status") == "True"}
    status = csr.get("status") if isinstance(csr.get("status"), dict) else {}
    spec = csr.get("spec") if isinstance(csr.get("spec"), dict) else {}
    return (APPROVED in kinds and DENIED not in kinds and FAILED not in kinds and not (status or {}).get("certificate")
            and (spec or {}).get("signerName") == SIGNER)


class Authority:
    """The cluster CA, read from its files once."""

    def __init__(self, cert_file: Path, key_file: Path, duration: datetime.timedelta = DEFAULT_DURATION) -> None:
        self.cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise ValueError(f"{key_file}: an EC or RSA key was expected")
        self.key: SigningKey = key
        self.duration = duration

    def sign(self, request_pem: bytes, usages: list[str], expiration_seconds: int | None) -> bytes:
        """The PEM certificate for a request (SignerError if the usages do not suit a client)."""
        problem = usages_error(usages)
        if problem:
            raise SignerError(problem)
        request = x509.load_pem_x509_csr(request_pem)
        ttl = self.duration
        if expiration_seconds is not None:
            ttl = min(ttl, datetime.timedelta(seconds=expiration_seconds))
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        not_after = now + ttl if ttl < SHORT else now + ttl - BACKDATE
        not_after = min(not_after, self.cert.not_valid_after_utc)
        builder = (x509.CertificateBuilder().subject_name(request.subject).issuer_name(self.cert.subject)
                   .public_key(request.public_key()).serial_number(secrets.randbits(127) + 1)
                   .not_valid_before(now - BACKDATE).not_valid_after(not_after)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
        if "digital signature" in usages or "key encipherment" in usages:  # Go writes no empty KeyUsage
            builder = builder.add_extension(_key_usage(usages), critical=True)
        try:
            ski = self.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski),
                                            critical=False)
        except x509.ExtensionNotFound:
            pass
        for extension in request.extensions:  # the subject alternative names and others the request asks for
            if not isinstance(extension.value, x509.KeyUsage | x509.ExtendedKeyUsage | x509.BasicConstraints):
                builder = builder.add_extension(extension.value, critical=extension.critical)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM)


def _key_usage(usages: list[str]) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature="digital signature" in usages, content_commitment=False,
        key_encipherment="key encipherment" in usages, data_encipherment=False, key_agreement=False,
        key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False)


class CSRSigningController:
    """An informer of the requests queues each added or changed one for one worker, which signs it if due."""

    def __init__(self, core: Core, authority: Authority) -> None:
        self._core = core
        self._authority = authority
        self._informer = Informer(core, CSRS)
        self._informer.add_handlers(Handlers(on_add=lambda csr, _: self._queue(csr),
                                             on_update=lambda _, csr: self._queue(csr)))
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[str]:
        return Worker(WorkQueue(ExponentialBackoff()), self._sync, name="capstan-csr-signing-controller")

    async def start(self) -> None:
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        await self._informer.start()
        self._worker.start()

    async def stop(self) -> None:
        await self._informer.stop()
        await self._worker.stop()

    def running(self) -> bool:
        return self._informer.running() and self._worker.running()

    def _queue(self, csr: Obj) -> None:
        self._worker.queue.add(str((csr.get("metadata") or {}).get("name") or ""))

    async def _sync(self, name: str) -> None:
        csr = self._informer.cache.get(("", name))
        if csr is not None:
            await self._consider(copy.deepcopy(csr))  # the cache's objects are shared, never changed

    async def _consider(self, csr: Obj) -> None:
        if not wants_certificate(csr):
            return
        spec = csr["spec"]
        seconds = spec.get("expirationSeconds")
        try:
            pem = self._authority.sign(base64.b64decode(spec.get("request") or ""), list(spec.get("usages") or []),
                                       seconds if isinstance(seconds, int) else None)
            csr["status"]["certificate"] = base64.b64encode(pem).decode()
        except (SignerError, ValueError) as err:
            csr["status"].setdefault("conditions", []).append({
                "type": FAILED, "status": "True", "reason": "SignerValidationFailure", "message": str(err),
                "lastUpdateTime": meta.now()})
        path = core_pb2.ResourcePath()
        path.CopyFrom(CSRS)
        path.name, path.subresource = csr["metadata"]["name"], "status"
        request = core_pb2.UpdateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(csr)))
        request.options.fieldManager = MANAGER
        try:
            await self._core.update(request)
        except errors.ApiError as err:  # changed meanwhile (409) or gone: the watch brings it back if still due
            log.info("signing %s: %s", csr["metadata"]["name"], err)


def singletons(core: Core, security: SecurityConfig) -> list[Singleton]:
    """The signer as a singleton when the cluster CA's files are configured (--insecure has none)."""
    cert_file, key_file = security.cluster_signing_cert_file, security.cluster_signing_key_file
    if cert_file is None or key_file is None:
        return []
    signer = CSRSigningController(core, Authority(cert_file, key_file))
    return [Singleton("CSRSigningController", signer.start, signer.stop)]
