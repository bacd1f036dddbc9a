"""certificates.k8s.io/v1 CertificateSigningRequests through the CoreService: the requester recorded from the
caller, kube-apiserver 1.28's validation Statuses (pkg/apis/certificates/validation), /approval and /status as
their strategies keep each other's fields, and the csrsigning controller issuing approved
kubernetes.io/kube-apiserver-client requests with the cluster CA (or marking them Failed).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from capstan.cli import pki
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.machinery.user import UNSECURED
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

GROUP = "certificates.k8s.io"
KIND = "CertificateSigningRequest"
SIGNER = "kubernetes.io/kube-apiserver-client"


def request_pem(common_name: str = "erin", organization: str = "devs") -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM)


REQUEST = base64.b64encode(request_pem()).decode()


def at(name: str = "", subresource: str = "") -> Any:
    return path("certificatesigningrequests", "", name, group=GROUP, subresource=subresource)


def body(name: str = "erin", **spec: Any) -> Obj:
    base = {"request": REQUEST, "signerName": SIGNER, "usages": ["client auth"], **spec}
    return {"apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": name},
            "spec": {k: v for k, v in base.items() if v is not None}}


def approved(csr: Obj, kind: str = "Approved") -> Obj:
    """What `kubectl certificate approve` (or deny) sends to /approval."""
    out = copy.deepcopy(csr)
    out.setdefault("status", {}).setdefault("conditions", []).append({
        "type": kind, "status": "True", "reason": "KubectlApprove", "message": "approved by a test"})
    return out


def invalid(field: str, rendered: str, detail: str) -> Obj:
    return kube.cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


async def test_create_records_the_caller_and_starts_with_no_status(client: Client) -> None:
    created = await client.create(at(), body(username="mallory", groups=["system:masters"]))
    assert created["spec"]["username"] == UNSECURED.name
    assert created["spec"]["groups"] == list(UNSECURED.groups)
    assert created["status"] == {}
    assert created["metadata"]["name"] == "erin"


@pytest.mark.parametrize(("spec", "causes"), [
    pytest.param({"request": base64.b64encode(b"not pem").decode()}, [
        invalid("spec.request", "[]byte{0x6e, 0x6f, 0x74, 0x20, 0x70, 0x65, 0x6d}",  # %#v of the []byte
                "PEM block type must be CERTIFICATE REQUEST")], id="request"),
    pytest.param({"request": None}, [
        invalid("spec.request", "[]byte(nil)", "PEM block type must be CERTIFICATE REQUEST")], id="no request"),
    pytest.param({"usages": None}, [kube.cause("FieldValueRequired", "Required value", "spec.usages")],
                 id="no usages"),
    pytest.param({"usages": ["client auth", "flying", "client auth"]}, [
        kube.cause("FieldValueNotSupported", 'Unsupported value: "flying": supported values: "any", "cert sign", '
                   '"client auth", "code signing", "content commitment", "crl sign", "data encipherment", "decipher '
                   'only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec '
                   'tunnel", "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", '
                   '"ocsp signing", "s/mime", "server auth", "signing", "timestamping"', "spec.usages[1]"),
        kube.cause("FieldValueDuplicate", 'Duplicate value: "client auth"', "spec.usages[2]")], id="usages"),
    pytest.param({"signerName": "signer"}, [
        invalid("spec.signerName", '"signer"',
                "must be a fully qualified domain and path of the form 'example.com/signer-name'")], id="signer"),
    pytest.param({"signerName": "example/Signer"}, [
        invalid("spec.signerName", '"example"', "should be a domain with at least two segments separated by dots"),
        invalid("spec.signerName", '"Signer"', kube.DNS1123_SUBDOMAIN)], id="signer parts"),
    pytest.param({"signerName": "kubernetes.io/legacy-unknown"}, [
        invalid("spec.signerName", '"kubernetes.io/legacy-unknown"',
                "the legacy signerName is not allowed via this API version")], id="legacy signer"),
    pytest.param({"expirationSeconds": 599}, [
        invalid("spec.expirationSeconds", "599", "may not specify a duration less than 600 seconds (10 minutes)")],
        id="expiration"),
])
async def test_create_is_refused_with_kubes_status(client: Client, spec: Obj, causes: list[Obj]) -> None:
    before = client.revision()
    failed = await refused(client.create(at(), body(**spec)))
    assert failed.status == kube.invalid(KIND, "erin", causes, group=GROUP)
    assert client.revision() == before


async def test_approval_sets_conditions_only_with_their_timestamps(client: Client) -> None:
    created = await client.create(at(), body())
    change = approved(created)
    change["spec"]["usages"] = ["server auth"]  # ignored: /approval changes the conditions only
    change["status"]["certificate"] = base64.b64encode(b"x").decode()
    updated, _ = await client.update(at("erin", "approval"), change)
    assert updated["spec"] == created["spec"]
    [condition] = updated["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("Approved", "True", "KubectlApprove")
    assert condition["lastUpdateTime"] and condition["lastTransitionTime"]
    assert "certificate" not in updated["status"]
    # The main resource keeps the status as stored.
    relabeled = copy.deepcopy(updated)
    relabeled["status"] = {}
    relabeled["metadata"]["labels"] = {"a": "b"}
    kept, _ = await client.update(at("erin"), relabeled)
    assert kept["status"] == updated["status"]


async def test_approved_and_denied_are_mutually_exclusive_and_never_removed(client: Client) -> None:
    created = await client.create(at(), body())
    updated, _ = await client.update(at("erin", "approval"), approved(created))
    both = approved(updated, "Denied")
    failed = await refused(client.update(at("erin", "approval"), both))
    shown = failed.status["details"]["causes"][0]["message"]
    assert failed.status["details"]["causes"][0]["field"] == "status.conditions"
    assert shown.endswith(": Approved and Denied conditions are mutually exclusive")
    removed = copy.deepcopy(updated)
    removed["status"]["conditions"] = []
    failed = await refused(client.update(at("erin", "approval"), removed))
    assert failed.status == kube.invalid(KIND, "erin", [kube.field_forbidden(
        "status.conditions", 'updates may not remove a condition of type "Approved"')], group=GROUP)


async def test_status_keeps_the_approval_conditions_as_stored(client: Client) -> None:
    created = await client.create(at(), body())
    status = approved(created)  # an Approved condition sent to /status is not taken
    status["status"]["certificate"] = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nxx\n").decode()
    failed = await refused(client.update(at("erin", "status"), status))
    assert failed.status["details"]["causes"][0]["field"] == "status.certificate"
    status["status"].pop("certificate")
    updated, _ = await client.update(at("erin", "status"), status)
    assert updated["status"] == {}


# ---------------------------------------------------------------- the signer


@pytest.fixture
async def signing(tmp_path: Path) -> AsyncIterator[tuple[Client, pki.CertDir]]:
    certs = pki.ensure(tmp_path / "pki", bind_address="127.0.0.1", service_ip="10.0.0.1")
    security = dataclasses.replace(INSECURE, cluster_signing_cert_file=certs.ca_cert,
                                   cluster_signing_key_file=certs.ca_key)
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0, future_wait=0.5))
    core: RunningCore = await start_core(store, listen="127.0.0.1", grpc_port=0, security=security,
                                         namespace_controllers=False)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            yield Client(core_pb2_grpc.CoreServiceStub(channel), core), certs  # type: ignore[no-untyped-call]
    finally:
        await core.stop()
        await store.close()


async def _eventually(client: Client, done: Any) -> Obj:
    for _ in range(100):
        got = await client.get(at("erin"))
        if done(got):
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"not signed: {got}")


async def test_an_approved_client_request_is_signed_by_the_cluster_ca(
        signing: tuple[Client, pki.CertDir]) -> None:
    client, certs = signing
    created = await client.create(at(), body(expirationSeconds=3600, usages=["digital signature", "client auth"]))
    await asyncio.sleep(0.2)
    assert "certificate" not in (await client.get(at("erin")))["status"]  # pending: nothing issued
    await client.update(at("erin", "approval"), approved(created))
    signed = await _eventually(client, lambda o: o["status"].get("certificate"))
    cert = x509.load_pem_x509_certificate(base64.b64decode(signed["status"]["certificate"]))
    ca = x509.load_pem_x509_certificate(certs.ca_cert.read_bytes())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == "CN=erin,O=devs"
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).total_seconds() == 3600 + 300  # backdated 5 min
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.CLIENT_AUTH])
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert (usage.digital_signature, usage.key_encipherment) == (True, False)


async def test_a_request_for_server_usages_is_marked_failed(signing: tuple[Client, pki.CertDir]) -> None:
    client, _ = signing
    created = await client.create(at(), body(usages=["server auth"]))
    await client.update(at("erin", "approval"), approved(created))
    failed = await _eventually(client, lambda o: len(o["status"].get("conditions", [])) == 2)
    condition = failed["status"]["conditions"][1]
    assert (condition["type"], condition["reason"], condition["message"]) == (
        "Failed", "SignerValidationFailure", "invalid usage for client certificate: server auth")
    assert "certificate" not in failed["status"]


async def test_a_denied_request_is_never_signed(signing: tuple[Client, pki.CertDir]) -> None:
    client, _ = signing
    created = await client.create(at(), body())
    await client.update(at("erin", "approval"), approved(created, "Denied"))
    await asyncio.sleep(0.3)
    assert "certificate" not in (await client.get(at("erin")))["status"]
