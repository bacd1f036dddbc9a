"""kube-apiserver 1.28's CertificateSigningRequest admission plugins over a real core (LMDB, the default admission
chain): CertificateApproval and CertificateSigning ask the RBAC authorizer for `approve` / `sign` on the request's
signer (its exact name, then `<domain>/*`), CertificateSubjectRestriction refuses kube-apiserver-client requests
for system:masters; refusals are kube's 403 texts.

The approving and signing user, carol, calls the core in-process as the guard leaves a caller (her user and the
RBAC authorizer, server.auth.caller), so only the plugins stand between her and the write.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server import admission
from server.auth import caller
from server.auth.config import INSECURE
from server.auth.rbac.start import RunningRbac, start_rbac
from server.machinery import errors
from server.machinery.user import UserInfo
from server.startup.app import RunningCore
from storage import StoreOptions
from tests import bootstrapped
from tests.server.client import Client, Obj, path, refused

GROUP = "certificates.k8s.io"
RBAC = "rbac.authorization.k8s.io"
SIGNER = "example.com/signer"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
CAROL = UserInfo("carol", groups=("system:authenticated",))
FORBIDDEN = 'certificatesigningrequests.certificates.k8s.io "c" is forbidden: '
MASTERS_REFUSED = (FORBIDDEN
                   + "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed")


def request_pem(common_name: str = "erin", organizations: tuple[str, ...] = ("devs",)) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def certificate_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "erin")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(hours=1)).sign(key, hashes.SHA256()))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def at(name: str = "", subresource: str = "") -> core_pb2.ResourcePath:
    return path("certificatesigningrequests", "", name, group=GROUP, subresource=subresource)


def csr(signer: str = SIGNER, request: str | None = None) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "c"},
            "spec": {"request": request or request_pem(), "signerName": signer, "usages": ["client auth"]}}


def with_condition(obj: Obj, kind: str) -> Obj:
    out = copy.deepcopy(obj)
    out.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": kind, "status": "True", "reason": "Test", "message": "by a test"})
    return out


@pytest.fixture
async def rbac(running: RunningCore) -> AsyncIterator[RunningRbac]:
    started = await start_rbac(running.core, aggregate=False)
    try:
        yield started
    finally:
        await started.stop()


async def grant(client: Client, rbac: RunningRbac, verbs: list[str], names: list[str]) -> None:
    """carol may `verbs` the signers `names` (no rule when either is empty), the index holding it on return."""
    rules = [{"apiGroups": [GROUP], "resources": ["signers"], "verbs": verbs, "resourceNames": names}]
    await client.create(path("clusterroles", group=RBAC), {
        "metadata": {"name": "carol-signers"}, "rules": rules if verbs and names else []})
    await client.create(path("clusterrolebindings", group=RBAC), {
        "metadata": {"name": "carol-signers"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "carol-signers"},
        "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "carol"}]})
    for _ in range(300):
        if ("ClusterRoleBinding", "", "carol-signers") in rbac.index.bindings:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the binding did not reach the RBAC index")


async def as_carol(rbac: RunningRbac, call: Callable[[], Awaitable[Any]]) -> None:
    token = caller.bind(caller.Caller(CAROL, rbac))
    try:
        await call()
    finally:
        caller.unbind(token)


async def update_as_carol(running: RunningCore, rbac: RunningRbac, subresource: str, obj: Obj) -> str:
    """carol's update through the subresource: "" when written, else the refusal's message."""
    request = core_pb2.UpdateRequest(path=at("c", subresource), object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj)))
    try:
        await as_carol(rbac, lambda: running.core.update(request))
    except errors.ApiError as err:
        assert err.code == 403
        return str(err.status.message)
    return ""


def refusal(verb: str, signer: str = SIGNER) -> str:
    return FORBIDDEN + f'user not permitted to {verb} requests with signerName "{signer}"'


@pytest.mark.parametrize(("verbs", "names", "condition", "message"), [
    pytest.param(["approve"], [SIGNER], "Approved", "", id="approve by the signer's name"),
    pytest.param(["approve"], [SIGNER], "Denied", "", id="deny by the signer's name"),
    pytest.param(["approve"], ["example.com/*"], "Approved", "", id="approve by the domain's wildcard"),
    pytest.param(["approve"], ["example.com/*"], "Denied", "", id="deny by the domain's wildcard"),
    pytest.param([], [], "Approved", refusal("approve"), id="approve with no signer permission"),
    pytest.param([], [], "Denied", refusal("approve"), id="deny with no signer permission"),
    pytest.param(["approve"], ["example.com/other"], "Approved", refusal("approve"), id="another signer's name"),
    pytest.param(["approve"], ["other.com/*"], "Approved", refusal("approve"), id="another domain's wildcard"),
    pytest.param(["approve"], ["*"], "Approved", refusal("approve"), id="a name that is no wildcard"),
    pytest.param(["sign"], [SIGNER], "Approved", refusal("approve"), id="sign is not approve"),
])
async def test_approval_needs_approve_on_the_signer(client: Client, running: RunningCore, rbac: RunningRbac,
                                                    verbs: list[str], names: list[str], condition: str,
                                                    message: str) -> None:
    await grant(client, rbac, verbs, names)
    created = await client.create(at(), csr())
    assert await update_as_carol(running, rbac, "approval", with_condition(created, condition)) == message
    stored = await client.get(at("c"))
    assert [c["type"] for c in stored["status"].get("conditions", [])] == ([] if message else [condition])


def _certificate(obj: Obj) -> Obj:
    return {**obj, "status": {**obj["status"], "certificate": certificate_pem()}}


def _failed(obj: Obj) -> Obj:
    return with_condition(obj, "Failed")


def _relabeled(obj: Obj) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "labels": {"seen": "yes"}}}


def _unchanged(obj: Obj) -> Obj:
    return obj


@pytest.mark.parametrize(("verbs", "names", "change", "message"), [
    pytest.param(["sign"], [SIGNER], _certificate, "", id="certificate by the signer's name"),
    pytest.param(["sign"], ["example.com/*"], _certificate, "", id="certificate by the domain's wildcard"),
    pytest.param([], [], _certificate, refusal("sign"), id="certificate with no signer permission"),
    pytest.param(["approve"], [SIGNER], _certificate, refusal("sign"), id="approve is not sign"),
    pytest.param(["sign"], ["other.com/*"], _certificate, refusal("sign"), id="another domain's wildcard"),
    # kube's plugin judges a change of the conditions as it judges one of the certificate
    pytest.param(["sign"], [SIGNER], _failed, "", id="a condition by the signer's name"),
    pytest.param([], [], _failed, refusal("sign"), id="a condition with no signer permission"),
    # neither the certificate nor the conditions change: nothing to sign
    pytest.param([], [], _relabeled, "", id="a label with no signer permission"),
    pytest.param([], [], _unchanged, "", id="nothing with no signer permission"),
])
async def test_status_needs_sign_on_the_signer_when_the_certificate_changes(
        client: Client, running: RunningCore, rbac: RunningRbac, verbs: list[str], names: list[str],
        change: Callable[[Obj], Obj], message: str) -> None:
    await grant(client, rbac, verbs, names)
    created = await client.create(at(), csr())
    approved, _ = await client.update(at("c", "approval"), with_condition(created, "Approved"))
    sent = change(approved)
    assert await update_as_carol(running, rbac, "status", sent) == message
    stored = await client.get(at("c"))
    if message:
        assert stored["status"] == approved["status"]
    else:
        assert stored["status"].get("certificate") == sent["status"].get("certificate")
        assert [c["type"] for c in stored["status"]["conditions"]] == [c["type"] for c in sent["status"]["conditions"]]
        assert stored["metadata"].get("labels") == sent["metadata"].get("labels")


@pytest.mark.parametrize(("signer", "common_name", "organizations", "message"), [
    pytest.param(CLIENT_SIGNER, "erin", ("system:masters",), MASTERS_REFUSED, id="client signer, masters"),
    pytest.param(CLIENT_SIGNER, "erin", ("devs", "system:masters"), MASTERS_REFUSED,
                 id="client signer, masters among others"),
    pytest.param(CLIENT_SIGNER, "erin", ("devs",), "", id="client signer, other groups"),
    # the organizations are the groups, not the common name
    pytest.param(CLIENT_SIGNER, "system:masters", ("devs",), "", id="client signer, masters as common name"),
    pytest.param(SIGNER, "erin", ("system:masters",), "", id="another signer, masters"),
    pytest.param("kubernetes.io/kube-apiserver-client-kubelet", "system:node:n", ("system:masters",), "",
                 id="the kubelet client signer, masters"),
])
async def test_no_client_certificate_for_system_masters(client: Client, signer: str, common_name: str,
                                                        organizations: tuple[str, ...], message: str) -> None:
    obj = csr(signer, request_pem(common_name, organizations))
    if not message:
        created = await client.create(at(), obj)
        assert created["spec"]["signerName"] == signer
        return
    before = client.revision()
    failed = await refused(client.create(at(), obj))
    assert (failed.status["code"], failed.status["reason"], failed.status["message"]) == (403, "Forbidden", message)
    assert client.revision() == before


async def test_disabled_plugins_leave_rbac_alone_to_decide(tmp_path: Path) -> None:
    """--disable-admission-plugins turns all three off: no signer permission asked, no subject refused."""
    off = admission.enabled(disable=("CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"))
    store, running = await bootstrapped.started(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0),
                                                security=INSECURE, namespace_controllers=False,
                                                admission_plugins=off)
    try:
        started = await start_rbac(running.core, aggregate=False)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
                client = Client(core_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
                await grant(client, started, [], [])
                created = await client.create(at(), csr(CLIENT_SIGNER, request_pem(organizations=("system:masters",))))
                assert await update_as_carol(running, started, "approval", with_condition(created, "Approved")) == ""
                approved = await client.get(at("c"))
                assert await update_as_carol(running, started, "status", _certificate(approved)) == ""
        finally:
            await started.stop()
    finally:
        await running.stop()
        await store.close()
