"""DeleteOptions bodies over HTTP, as client-go sends them: in the deleted resource's own group version.

kube-apiserver decodes a DELETE or deletecollection body through the meta scheme, where DeleteOptions is an
unversioned kind created for any group version (handlers/delete.go, meta/internalversion/register.go), so
``batch/v1``, ``example.com/v1`` or ``meta.k8s.io/v1`` DeleteOptions are all the same options. Another kind
fails with the scheme's error (a 500 there; Capstan's 400). The body, when there is one, is the only source
of options: the query is read only for an empty body.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from gateway.codecs import protobuf
from tests.gateway import kube
from tests.gateway.conftest import Server
from tests.gateway.test_http_crds import CRD, CRDS, install

Obj = dict[str, Any]

JSON, YAML, PROTOBUF = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
POD_TEMPLATE: Obj = {"metadata": {"labels": {"app": "web"}},
                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
JOB: Obj = {"metadata": {"name": "pi"}, "spec": {"template": POD_TEMPLATE}}
SCHEME = "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27"

# What each resource's typed client deletes: (collection path, group version, object to create).
RESOURCES: dict[str, tuple[str, str, Obj]] = {
    "crd": (CRDS, "apiextensions.k8s.io/v1", CRD),
    "job": (JOBS, "batch/v1", JOB),
    "cronjob": ("/apis/batch/v1/namespaces/default/cronjobs", "batch/v1", {
        "metadata": {"name": "pi"}, "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {
            "template": POD_TEMPLATE}}}}),
    "lease": ("/apis/coordination.k8s.io/v1/namespaces/default/leases", "coordination.k8s.io/v1", {
        "metadata": {"name": "pi"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
    "event": ("/apis/events.k8s.io/v1/namespaces/default/events", "events.k8s.io/v1", {
        "metadata": {"name": "pi"}, "eventTime": "2024-05-01T12:00:00.000000Z", "reportingController": "x.io/c",
        "reportingInstance": "c-1", "action": "Scale", "reason": "Scaled", "type": "Normal",
        "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"}}),
    "deployment": ("/apis/apps/v1/namespaces/default/deployments", "apps/v1", {
        "metadata": {"name": "pi"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    "widget": ("/apis/example.com/v1/namespaces/default/widgets", "example.com/v1", {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "pi"}, "spec": {"size": 1}}),
}


def client_go_json(api_version: str, options: str) -> bytes:
    """The body client-go's typed clients send (rest.Request.Body of a metav1.DeleteOptions, encoded in
    the client's group version): TypeMeta first, then the options set, with no spaces."""
    return f'{{"kind":"DeleteOptions","apiVersion":"{api_version}",{options}}}'.encode()


def client_go_protobuf(api_version: str, raw: bytes) -> bytes:
    """The protobuf body client-go sends for built-in kinds: ``k8s\\x00``, then runtime.Unknown{typeMeta
    {apiVersion, kind}, raw DeleteOptions, contentEncoding "", contentType ""}, written out by hand."""
    type_meta = bytes([0x0A, len(api_version)]) + api_version.encode() + b"\x12\x0dDeleteOptions"
    unknown = b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12" + bytes([len(raw)]) + raw + b"\x1a\x00\x22\x00"
    return b"k8s\x00" + unknown


BACKGROUND = b"\x22\x0aBackground"  # DeleteOptions{propagationPolicy (4): "Background"}
DRY_RUN = b"\x2a\x03All"  # DeleteOptions{dryRun (5): ["All"]}


async def create(server: Server, name: str) -> tuple[str, Obj]:
    """The object of RESOURCES[name], created (the CRD served first for a widget), once no controller
    writes it any more; its URL and body."""
    path, _, obj = RESOURCES[name]
    if name in ("crd", "widget"):
        await install(server)
        await registered(server)
    if name == "crd":
        url = f"{CRDS}/{CRD['metadata']['name']}"
        for _ in range(200):  # the CRD controller's status writes end with Established
            crd = (await server.request("GET", url)).json()
            conditions = crd.get("status", {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return url, crd
            await asyncio.sleep(0.01)
        raise AssertionError(f"not established: {crd}")
    created = await server.create(path, obj)
    return f"{path}/{created['metadata']['name']}", created


async def registered(server: Server) -> None:
    """Wait for the APIService the CRD's group version gets (kube's crdRegistration controller writes it, and
    its Available status, soon after the CRD is served): no controller writes anything after that."""
    group = CRD["spec"]["group"]
    url = f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{group}"
    for _ in range(500):
        found = await server.request("GET", url)
        conditions = found.json().get("status", {}).get("conditions") or [] if found.status == 200 else []
        if any(c["type"] == "Available" and c["status"] == "True" for c in conditions):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no Available APIService v1.{group}")


# What batchv1.Jobs(ns).Delete(ctx, "pi", metav1.DeleteOptions{PropagationPolicy: &background}) sends, as
# JSON (Content-Type application/json, client-go's default) and as protobuf (application/vnd.kubernetes.protobuf,
# what kube-controller-manager and kubectl's clients use for built-in kinds).
CLIENT_GO_JOB_JSON = b'{"kind":"DeleteOptions","apiVersion":"batch/v1","propagationPolicy":"Background"}'
CLIENT_GO_JOB_PROTOBUF = b'k8s\x00\n\x19\n\x08batch/v1\x12\rDeleteOptions\x12\x0c"\nBackground\x1a\x00"\x00'


def test_the_helpers_write_client_gos_bytes() -> None:
    assert client_go_json("batch/v1", '"propagationPolicy":"Background"') == CLIENT_GO_JOB_JSON
    assert client_go_protobuf("batch/v1", BACKGROUND) == CLIENT_GO_JOB_PROTOBUF
    assert protobuf.encode_envelope("batch/v1", "DeleteOptions", BACKGROUND) == CLIENT_GO_JOB_PROTOBUF


@pytest.mark.parametrize(("body", "content_type"), [(CLIENT_GO_JOB_JSON, JSON), (CLIENT_GO_JOB_PROTOBUF, PROTOBUF)])
async def test_client_go_deletes_a_job(server: Server, body: bytes, content_type: str) -> None:
    await server.create(JOBS, JOB)
    resp = await server.request("DELETE", f"{JOBS}/pi", body=body, headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    assert (await server.request("GET", f"{JOBS}/pi")).status == 404


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
@pytest.mark.parametrize("name", list(RESOURCES))
async def test_client_go_delete_in_the_resources_group_version(server: Server, name: str, encoding: str) -> None:
    """client-go's Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background}) for each kind:
    JSON from a default rest.Config, protobuf when the config asks for it (built-in kinds; kube-apiserver
    takes it for any resource, since the body is decoded by the meta scheme)."""
    url, _ = await create(server, name)
    api_version = RESOURCES[name][1]
    body, content_type = ((client_go_json(api_version, '"propagationPolicy":"Background"'), JSON)
                          if encoding == "json" else (client_go_protobuf(api_version, BACKGROUND), PROTOBUF))
    resp = await server.request("DELETE", url, body=body, headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    if name != "crd":  # a CRD waits for its cleanup finalizer
        gone = await server.request("GET", url)
        assert gone.status == 404, gone.body


@pytest.mark.parametrize("name", ["crd", "job", "lease", "event", "deployment", "widget"])
@pytest.mark.parametrize("encoding", ["json", "protobuf"])
async def test_body_options_in_the_resources_group_version_are_read(server: Server, name: str, encoding: str) -> None:
    """The options are used, not merely accepted: a dry run in the resource's group version deletes
    nothing, and a precondition on another uid is the 409 it is."""
    url, created = await create(server, name)
    api_version = RESOURCES[name][1]
    dry_run, content_type = ((client_go_json(api_version, '"dryRun":["All"]'), JSON) if encoding == "json"
                             else (client_go_protobuf(api_version, DRY_RUN), PROTOBUF))
    resp = await server.request("DELETE", url, body=dry_run, headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    # The object unchanged to its resourceVersion: a delete would remove it, or mark it deleted where a finalizer
    # holds it. The store's revision is not compared: a controller may write another object meanwhile.
    assert (await server.request("GET", url)).json()["metadata"] == created["metadata"]

    precondition = client_go_json(api_version, '"preconditions":{"uid":"other"}')
    refused = await server.request("DELETE", url, body=precondition, headers={"Content-Type": JSON})
    assert (refused.status, refused.json()["reason"]) == (409, "Conflict")
    assert (await server.request("GET", url)).json()["metadata"] == created["metadata"]


@pytest.mark.parametrize(("body", "content_type"), [
    (client_go_json("batch/v1", '"dryRun":["All"]'), JSON),
    (client_go_json("meta.k8s.io/v1", '"dryRun":["All"]'), JSON),
    (client_go_json("v1", '"dryRun":["All"]'), JSON),  # the dynamic client's (its scheme registers {"" v1})
    (client_go_json("apps/v1", '"dryRun":["All"]'), JSON),  # another served group's
    (client_go_json("nowhere.example/v9", '"dryRun":["All"]'), JSON),  # a group nobody serves: kind is all it takes
    (client_go_json("meta.k8s.io/", '"dryRun":["All"]'), JSON),  # the meta group's version is defaulted
    (client_go_json("/", '"dryRun":["All"]'), JSON),  # the empty group version
    (b'{"apiVersion":"batch/v1","dryRun":["All"]}', JSON),  # no kind: DeleteOptions
    (b'{"KIND":"DeleteOptions","ApiVersion":"batch/v1","dryRun":["All"]}', JSON),  # encoding/json folds case
    (b'{"kind":null,"apiVersion":null,"dryRun":["All"]}', JSON),
    (b"kind: DeleteOptions\napiVersion: batch/v1\ndryRun: [All]\n", YAML),
    (client_go_protobuf("batch/v1", DRY_RUN), PROTOBUF),
    (client_go_protobuf("nowhere.example/v9", DRY_RUN), PROTOBUF),
    (client_go_protobuf("a/b/c", DRY_RUN), PROTOBUF),  # unparsable: FromAPIVersionAndKind drops it
    (client_go_protobuf("batch/", DRY_RUN), PROTOBUF),  # no version: the default group version
    (protobuf.encode_envelope("", "", DRY_RUN), PROTOBUF),
], ids=["own-group", "meta", "legacy", "other-group", "unserved-group", "meta-no-version", "slash", "no-kind",
        "folded-keys", "null-type", "yaml", "protobuf", "protobuf-unserved", "protobuf-unparsable",
        "protobuf-no-version", "protobuf-untyped"])
async def test_delete_options_of_any_group_version(server: Server, body: bytes, content_type: str) -> None:
    created = await server.create(JOBS, JOB)
    revision = server.revision()
    resp = await server.request("DELETE", f"{JOBS}/pi", body=body, headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    assert server.revision() == revision
    assert (await server.request("GET", f"{JOBS}/pi")).json()["metadata"] == created["metadata"]


NOT_AN_OBJECT = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                 'Kind string "json:\\"kind,omitempty\\"" }')


@pytest.mark.parametrize(("body", "content_type", "message"), [
    (b'{"kind":"Pod","apiVersion":"v1"}', JSON,
     f'no kind "Pod" is registered for version "v1" in scheme "{SCHEME}"'),
    (b'{"kind":"Job","apiVersion":"batch/v1","propagationPolicy":"Background"}', JSON,
     f'no kind "Job" is registered for version "batch/v1" in scheme "{SCHEME}"'),
    (b'{"kind":"Job"}', JSON,  # the default group version is meta.k8s.io/v1
     f'no kind "Job" is registered for version "meta.k8s.io/v1" in scheme "{SCHEME}"'),
    (b'{"kind":"Job","apiVersion":"batch/__internal"}', JSON,
     f'no kind "Job" is registered for the internal version of group "batch" in scheme "{SCHEME}"'),
    (b'{"kind":"Status","apiVersion":"batch/v1"}', JSON,  # unversioned: created in any group version
     "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
    (b'{"kind":"CreateOptions","apiVersion":"batch/v1"}', JSON,
     "converting (v1.CreateOptions) to (v1.DeleteOptions): unknown conversion"),
    (b'{"kind":"ListOptions","apiVersion":"meta.k8s.io/v1"}', JSON,
     "converting (v1.ListOptions) to (v1.DeleteOptions): unknown conversion"),
    (b'{"kind":"ListOptions","apiVersion":"meta.k8s.io/__internal"}', JSON,
     "converting (internalversion.ListOptions) to (v1.DeleteOptions): unknown conversion"),
    (b'{"kind":"ListOptions","apiVersion":"batch/v1"}', JSON,
     f'no kind "ListOptions" is registered for version "batch/v1" in scheme "{SCHEME}"'),
    (b'{"kind":"DeleteOptions","apiVersion":"a/b/c"}', JSON, "unexpected GroupVersion string: a/b/c"),
    (b'{"kind":"DeleteOptions","apiVersion":"batch/"}', JSON,
     """Object 'apiVersion' is missing in '{"kind":"DeleteOptions","apiVersion":"batch/"}'"""),
    (b"kind: DeleteOptions\napiVersion: batch/\n", YAML,  # the body as sent, not its JSON
     "Object 'apiVersion' is missing in 'kind: DeleteOptions\napiVersion: batch/\n'"),
    (b'{"kind":"DeleteOptions","apiVersion":1}', JSON, "couldn't get version/kind; json parse error: json: "
     "cannot unmarshal number into Go struct field .apiVersion of type string"),
    (b'{"kind":["DeleteOptions"]}', JSON, "couldn't get version/kind; json parse error: json: "
     "cannot unmarshal array into Go struct field .kind of type string"),
    (b"[1]", JSON, f"couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of "
     f"type {NOT_AN_OBJECT}"),
    (b'"DeleteOptions"', JSON, f"couldn't get version/kind; json parse error: json: cannot unmarshal string into "
     f"Go value of type {NOT_AN_OBJECT}"),
    (b'{"kind":"DeleteOptions",', JSON, "couldn't get version/kind; json parse error: unexpected end of JSON input"),
    (b'{"gracePeriodSeconds":tru}', JSON, "couldn't get version/kind; json parse error: invalid character '}' in "
     "literal true (expecting 'e')"),
    (b"kind: Pod\napiVersion: v1\n", YAML, f'no kind "Pod" is registered for version "v1" in scheme "{SCHEME}"'),
    (protobuf.encode_envelope("v1", "Pod", b""), PROTOBUF,
     f'no kind "Pod" is registered for version "v1" in scheme "{SCHEME}"'),
    (protobuf.encode_envelope("batch/v1", "Status", b""), PROTOBUF,
     "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
], ids=["pod", "own-kind", "kind-only", "internal", "status", "create-options", "list-options",
        "internal-list-options", "list-options-elsewhere", "unparsable-version", "no-version", "yaml-no-version",
        "version-not-string", "kind-not-string", "array", "string", "truncated", "bad-literal", "yaml-pod",
        "protobuf-pod", "protobuf-status"])
async def test_other_kinds_are_refused_with_the_schemes_error(
    server: Server, body: bytes, content_type: str, message: str
) -> None:
    """kube-apiserver answers these 500 with the decoder's error as is (it is no APIStatus); the message is
    kept, the code is the 400 it is."""
    await server.create(JOBS, JOB)
    revision = server.revision()
    resp = await server.request("DELETE", f"{JOBS}/pi", body=body, headers={"Content-Type": content_type})
    assert (resp.status, resp.json()) == (400, kube.bad_request(message))
    assert server.revision() == revision
    assert (await server.request("GET", f"{JOBS}/pi")).status == 200


@pytest.mark.parametrize(("query", "body", "content_type", "deleted"), [
    ("?dryRun=All", client_go_json("batch/v1", '"propagationPolicy":"Background"'), JSON, True),
    ("?gracePeriodSeconds=-1", client_go_json("batch/v1", '"propagationPolicy":"Background"'), JSON, True),
    ("?propagationPolicy=Never&orphanDependents=true", client_go_protobuf("batch/v1", BACKGROUND), PROTOBUF, True),
    ("?dryRun=All", b"", None, False),  # an empty body: the query's options
], ids=["dry-run-query", "bad-grace-query", "bad-policy-query", "query-alone"])
async def test_the_body_wins_over_the_query(
    server: Server, query: str, body: bytes, content_type: str | None, deleted: bool
) -> None:
    """handlers/delete.go decodes the body when it is not empty and the query only when it is: options in
    the query beside a body, even ones the query could not hold, are not read."""
    await server.create(JOBS, JOB)
    headers = {"Content-Type": content_type} if content_type else {}
    resp = await server.request("DELETE", f"{JOBS}/pi{query}", body=body or None, headers=headers)
    assert resp.status == 200, resp.body
    assert (await server.request("GET", f"{JOBS}/pi")).status == (404 if deleted else 200)


async def names(server: Server, path: str) -> list[str]:
    return [item["metadata"]["name"] for item in (await server.request("GET", path)).json()["items"]]


@pytest.mark.parametrize(("name", "encoding"), [
    ("job", "json"), ("job", "protobuf"), ("lease", "protobuf"), ("deployment", "json"), ("widget", "json"),
])
async def test_client_go_deletecollection_in_the_resources_group_version(
    server: Server, name: str, encoding: str
) -> None:
    """client-go's DeleteCollection(ctx, metav1.DeleteOptions{...}, metav1.ListOptions{LabelSelector}):
    DeleteOptions in the body, in the resource's group version, ListOptions in the query."""
    path, api_version, obj = RESOURCES[name]
    if name == "widget":
        await install(server)
    for suffix, labels in (("a", {"tier": "x"}), ("b", {"tier": "x"}), ("c", {"tier": "y"})):
        await server.create(path, {**obj, "metadata": {"name": f"pi-{suffix}", "labels": labels}})
    dry_run, content_type = ((client_go_json(api_version, '"dryRun":["All"]'), JSON) if encoding == "json"
                             else (client_go_protobuf(api_version, DRY_RUN), PROTOBUF))
    revision = server.revision()
    resp = await server.request("DELETE", f"{path}?labelSelector=tier%3Dx", body=dry_run,
                                headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    assert server.revision() == revision
    assert await names(server, path) == ["pi-a", "pi-b", "pi-c"]

    background, content_type = ((client_go_json(api_version, '"propagationPolicy":"Background"'), JSON)
                                if encoding == "json" else (client_go_protobuf(api_version, BACKGROUND), PROTOBUF))
    resp = await server.request("DELETE", f"{path}?labelSelector=tier%3Dx", body=background,
                                headers={"Content-Type": content_type})
    assert resp.status == 200, resp.body
    assert await names(server, path) == ["pi-c"]


@pytest.mark.parametrize(("query", "body", "message"), [
    ("", b'{"kind":"Pod","apiVersion":"v1"}', f'no kind "Pod" is registered for version "v1" in scheme "{SCHEME}"'),
    ("?labelSelector=tier%3Dx", orjson.dumps({"kind": "Status", "apiVersion": "batch/v1"}),
     "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
], ids=["pod", "status"])
async def test_deletecollection_refuses_other_kinds(server: Server, query: str, body: bytes, message: str) -> None:
    await server.create(JOBS, {**JOB, "metadata": {"name": "pi", "labels": {"tier": "x"}}})
    revision = server.revision()
    resp = await server.request("DELETE", f"{JOBS}{query}", body=body, headers={"Content-Type": JSON})
    assert (resp.status, resp.json()) == (400, kube.bad_request(message))
    assert server.revision() == revision
