"""POST, PUT, DELETE and deletecollection over HTTP: status codes, the whole answer, DeleteOptions from the
body or the query, dry runs, field validation and the JSON conventions of the answers."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.gateway import kube
from tests.gateway.conftest import Server

Obj = dict[str, Any]
CM = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"


async def test_post_201_put_200_and_conflicts(server: Server) -> None:
    created = await server.request("POST", CM, json={"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "a"}, "data": {"k": "v"}})
    stamps = kube.stamped(created.json())
    first = server.revision()
    assert (created.status, created.content_type, created.json()) == (
        201, "application/json", kube.config_map("a", first, stamps, data={"k": "v"}))
    assert list(created.json()) == ["kind", "apiVersion", "metadata", "data"]

    again = await server.request("POST", CM, json={"metadata": {"name": "a"}})
    assert (again.status, again.json()) == (409, kube.already_exists("configmaps", "a"))

    updated = await server.request("PUT", f"{CM}/a", json={"metadata": {"name": "a"}, "data": {"k": "w"}})
    stamps = kube.stamped(updated.json())  # the same manager changed data.k: its entry's time moves
    assert (updated.status, updated.json()) == (200, kube.config_map("a", server.revision(), stamps, data={"k": "w"}))

    stale = await server.request("PUT", f"{CM}/a", json={
        "metadata": {"name": "a", "resourceVersion": str(first)}, "data": {"k": "x"}})
    assert (stale.status, stale.json()) == (409, kube.status(409, "Conflict", (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"), {"name": "a", "kind": "configmaps"}))

    missing = await server.request("PUT", f"{CM}/b", json={"metadata": {"name": "b"}})
    assert (missing.status, missing.json()) == (404, kube.not_found("configmaps", "b"))  # no create on update

    renamed = await server.request("PUT", f"{CM}/a", json={"metadata": {"name": "b"}})
    assert (renamed.status, renamed.json()) == (400, kube.bad_request(
        "the name of the object (b) does not match the name on the URL (a)"))


async def test_delete_answers_success_status_for_configmaps(server: Server) -> None:
    created = await server.create(CM, {"metadata": {"name": "a"}})
    resp = await server.request("DELETE", f"{CM}/a")
    assert (resp.status, resp.content_type, resp.json()) == (
        200, "application/json", kube.success("a", "configmaps", created["metadata"]["uid"]))
    assert list(resp.json()) == ["kind", "apiVersion", "metadata", "status", "details"]
    gone = await server.request("GET", f"{CM}/a")
    assert (gone.status, gone.json()) == (404, kube.not_found("configmaps", "a"))
    again = await server.request("DELETE", f"{CM}/a")
    assert (again.status, again.json()) == (404, kube.not_found("configmaps", "a"))


@pytest.mark.parametrize(("collection", "body"), [
    ("/api/v1/namespaces/default/pods", {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}),
    ("/api/v1/namespaces/default/services", {"spec": {"ports": [{"port": 80}]}}),
    ("/api/v1/namespaces/default/serviceaccounts", {}),
    ("/api/v1/persistentvolumes", {"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                            "hostPath": {"path": "/data"}}}),
], ids=["pods", "services", "serviceaccounts", "persistentvolumes"])
async def test_delete_answers_the_deleted_object_where_kube_returns_it(server: Server, collection: str,
                                                                        body: Obj) -> None:
    # ReturnDeletedObject in the kind's registry store: 200 with the object, at the revision of its deletion.
    created = await server.create(collection, {"metadata": {"name": "web"}, **body})
    if created["metadata"].get("finalizers") == ["kubernetes.io/pv-protection"]:
        # StorageObjectInUseProtection's, which kube-controller-manager's pv-protection would take from a free volume
        created["metadata"]["finalizers"] = []
        created = (await server.request("PUT", f"{collection}/web", json=created)).json()
    resp = await server.request("DELETE", f"{collection}/web")
    deleted = resp.json()
    assert (resp.status, resp.content_type) == (200, "application/json")
    assert list(deleted)[:3] == ["kind", "apiVersion", "metadata"]
    assert deleted["metadata"]["resourceVersion"] == str(server.revision())
    unversioned = {k: v for k, v in deleted["metadata"].items() if k != "resourceVersion"}
    assert dict(deleted, metadata=unversioned) == dict(created, metadata={
        k: v for k, v in created["metadata"].items() if k != "resourceVersion"})
    gone = await server.request("GET", f"{collection}/web")
    assert gone.status == 404


async def test_delete_answers_the_object_for_namespaces_held_by_finalizers(server: Server) -> None:
    created = await server.create("/api/v1/namespaces", {"metadata": {"name": "team"}})
    resp = await server.request("DELETE", "/api/v1/namespaces/team")
    doc = resp.json()
    assert resp.status == 200
    rv = doc["metadata"]["resourceVersion"]  # the namespace controller may have written since
    assert int(created["metadata"]["resourceVersion"]) < int(rv) <= server.revision()
    assert doc == {
        "kind": "Namespace", "apiVersion": "v1",
        "metadata": {**created["metadata"], "resourceVersion": rv,
                     "deletionTimestamp": doc["metadata"]["deletionTimestamp"], "deletionGracePeriodSeconds": 0},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"},
    }
    assert kube.RFC3339.fullmatch(doc["metadata"]["deletionTimestamp"])
    immortal = await server.request("DELETE", "/api/v1/namespaces/default")
    assert (immortal.status, immortal.json()) == (403, kube.status(
        403, "Forbidden", 'namespaces "default" is forbidden: this namespace may not be deleted',
        {"name": "default", "kind": "namespaces"}))


DRY_RUN_BODY = orjson.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]})


@pytest.mark.parametrize(("query", "body", "content_type"), [
    ("?dryRun=All", b"", None),
    ("", DRY_RUN_BODY, "application/json"),
    ("", DRY_RUN_BODY, None),  # no Content-Type: JSON
    ("", b"apiVersion: meta.k8s.io/v1\nkind: DeleteOptions\ndryRun:\n- All\n", "application/yaml"),
    ("", b'{"dryRun":["All"]}', "application/json; charset=utf-8"),
], ids=["query", "json-body", "untyped-body", "yaml-body", "charset"])
async def test_delete_dry_run_from_query_or_body(
    server: Server, query: str, body: bytes, content_type: str | None
) -> None:
    created = await server.create(CM, {"metadata": {"name": "a"}})
    revision = server.revision()
    headers = {"Content-Type": content_type} if content_type else {}
    resp = await server.request("DELETE", f"{CM}/a{query}", body=body or None, headers=headers)
    assert (resp.status, resp.json()) == (200, kube.success("a", "configmaps", created["metadata"]["uid"]))
    assert server.revision() == revision
    still = await server.request("GET", f"{CM}/a")
    assert (still.status, still.json()) == (200, created)


async def test_delete_body_wins_over_query(server: Server) -> None:
    """kube-apiserver reads DeleteOptions from the body when there is one and the query only when there
    is none (handlers/delete.go): ?dryRun=All beside a body without it deletes."""
    created = await server.create(CM, {"metadata": {"name": "a"}})
    resp = await server.request("DELETE", f"{CM}/a?dryRun=All", json={"gracePeriodSeconds": 0})
    assert (resp.status, resp.json()) == (200, kube.success("a", "configmaps", created["metadata"]["uid"]))
    gone = await server.request("GET", f"{CM}/a")
    assert gone.status == 404


@pytest.mark.parametrize(("query", "body", "content_type", "code", "expected"), [
    ("", b'{"preconditions":{"uid":"nope"}}', "application/json", 409, lambda uid: kube.status(
        409, "Conflict", (f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (nope) does '
                          f"not match the UID in record ({uid}). The object might have been deleted and then "
                          "recreated"), {"name": "a", "kind": "ConfigMap"})),
    ("?gracePeriodSeconds=soon", b"", None, 400, lambda uid: kube.bad_request(
        'strconv.ParseInt: parsing "soon": invalid syntax')),
    ("?propagationPolicy=Never", b"", None, 422, lambda uid: kube.invalid_option(
        "DeleteOptions", "propagationPolicy", "FieldValueNotSupported",
        'Unsupported value: "Never": supported values: "Foreground", "Background", "Orphan", "nil"')),
    ("?dryRun=Maybe", b"", None, 422, lambda uid: kube.invalid_option(
        "DeleteOptions", "dryRun", "FieldValueNotSupported",
        'Unsupported value: []string{"Maybe"}: supported values: "All"')),
    ("", b"{not json", "application/json", 400, lambda uid: kube.bad_request(
        "couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key "
        "string")),
    ("", b"[1]", "application/json", 400, lambda uid: kube.bad_request(
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type "
        'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')),
    ("", b'{"kind":"ConfigMap","apiVersion":"v1"}', "application/json", 400, lambda uid: kube.bad_request(
        'no kind "ConfigMap" is registered for version "v1" in scheme '
        '"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27"')),
    ("", b"dryRun: [All", "application/yaml", 400, lambda uid: kube.bad_request(
        "yaml: line 1: did not find expected ',' or ']'")),
    ("", b"{}", "text/plain", 415, lambda uid: kube.status(415, "UnsupportedMediaType", kube.UNSUPPORTED_BODY)),
], ids=["precondition", "grace-malformed", "policy", "dry-run-value", "malformed-json",
        "not-an-object", "other-kind", "malformed-yaml", "unknown-type"])
async def test_delete_options_refused(
    server: Server, query: str, body: bytes, content_type: str | None, code: int, expected: Any
) -> None:
    created = await server.create(CM, {"metadata": {"name": "a"}})
    revision = server.revision()
    headers = {"Content-Type": content_type} if content_type else {}
    resp = await server.request("DELETE", f"{CM}/a{query}", body=body or None, headers=headers)
    assert (resp.status, resp.json()) == (code, expected(created["metadata"]["uid"]))
    assert server.revision() == revision


@pytest.mark.parametrize("grace", ["-1", "-30"])
async def test_delete_with_a_negative_grace_period_deletes(server: Server, grace: str) -> None:
    """kube-apiserver 1.28 does not validate gracePeriodSeconds (ValidateDeleteOptions checks only the
    propagation policy and dryRun); rest.BeforeDelete counts a negative period as 1 second, and a kind without
    graceful deletion goes at once."""
    created = await server.create(CM, {"metadata": {"name": "a"}})
    resp = await server.request("DELETE", f"{CM}/a?gracePeriodSeconds={grace}")
    assert (resp.status, resp.json()) == (200, kube.success("a", "configmaps", created["metadata"]["uid"]))
    assert (await server.request("GET", f"{CM}/a")).status == 404


async def test_deletecollection_with_selectors(server: Server) -> None:
    made = {name: await server.create(CM, {"metadata": {"name": name, "labels": labels}})
            for name, labels in (("a", {"app": "x"}), ("b", {"app": "x", "tier": "db"}), ("c", {"app": "y"}))}
    other = await server.create("/api/v1/namespaces/kube-system/configmaps",
                                {"metadata": {"name": "a", "labels": {"app": "x"}}})

    dry = await server.request("DELETE", f"{CM}?labelSelector=app%3Dx&dryRun=All")
    assert dry.status == 200
    assert [item["metadata"]["name"] for item in dry.json()["items"]] == ["a", "b"]

    before = server.revision()
    resp = await server.request("DELETE", f"{CM}?labelSelector=app%3Dx,tier!%3Ddb")
    # The list of what was deleted, as listed before deleting it (genericregistry.Store.DeleteCollection).
    assert (resp.status, resp.json()["kind"], resp.json()["metadata"]) == (
        200, "ConfigMapList", {"resourceVersion": str(before)})
    assert [item["metadata"] for item in resp.json()["items"]] == [made["a"]["metadata"]]
    by_field = await server.request("DELETE", f"{CM}?fieldSelector=metadata.name%3Dc")
    assert [item["metadata"]["name"] for item in by_field.json()["items"]] == ["c"]
    left = await server.request("GET", "/api/v1/configmaps")
    assert [i["metadata"] for i in left.json()["items"]] == [made["b"]["metadata"], other["metadata"]]

    bad = await server.request("DELETE", f"{CM}?labelSelector=app%3D%3D%3D")
    assert (bad.status, bad.json()) == (400, kube.bad_request(
        "unable to parse requirement: found '=', expected: identifier"))


async def test_deletecollection_items_are_list_items(server: Server) -> None:
    made = await server.create(CM, {"metadata": {"name": "a"}})
    resp = await server.request("DELETE", CM)
    assert resp.json()["items"] == [{k: v for k, v in made.items() if k not in ("kind", "apiVersion")}]


async def test_create_dry_run_stores_nothing(server: Server) -> None:
    revision = server.revision()
    resp = await server.request("POST", f"{CM}?dryRun=All", json={"metadata": {"name": "a"}, "data": {"k": "v"}})
    doc = resp.json()
    stamps = kube.stamped(doc)
    # Nothing was stored, so there is no resourceVersion to report.
    assert (resp.status, doc) == (201, {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": "a", "namespace": "default", **stamps}, "data": {"k": "v"}})
    assert server.revision() == revision
    assert (await server.request("GET", f"{CM}/a")).status == 404
    bad = await server.request("POST", f"{CM}?dryRun=Sometimes", json={"metadata": {"name": "a"}})
    assert (bad.status, bad.json()) == (422, kube.invalid_option(
        "CreateOptions", "dryRun", "FieldValueNotSupported",
        'Unsupported value: []string{"Sometimes"}: supported values: "All"'))


async def test_secret_json_conventions(server: Server) -> None:
    """data is base64 on the wire; stringData is write-only, merged into data; type defaults to Opaque."""
    resp = await server.request("POST", SECRETS, json={
        "metadata": {"name": "s"}, "data": {"a": "aGVsbG8="}, "stringData": {"b": "world", "a": "hi"}})
    stamps = kube.stamped(resp.json())
    assert (resp.status, resp.json()) == (201, {
        "kind": "Secret", "apiVersion": "v1",
        "metadata": {"name": "s", "namespace": "default", "uid": stamps["uid"],
                     "resourceVersion": str(server.revision()), "creationTimestamp": stamps["creationTimestamp"],
                     **kube.managed(stamps)},
        "data": {"a": "aGk=", "b": "d29ybGQ="}, "type": "Opaque",
    })
    bad = await server.request("POST", SECRETS, json={"metadata": {"name": "t"}, "data": {"a": "not base64!"}})
    assert (bad.status, bad.json()) == (400, kube.bad_request(
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'))


async def test_empty_fields_are_omitted(server: Server) -> None:
    resp = await server.request("POST", CM, json={
        "metadata": {"name": "e", "labels": {}, "annotations": {}, "finalizers": []},
        "data": {}, "binaryData": {}, "immutable": None})
    stamps = kube.stamped(resp.json())
    assert (resp.status, resp.json()) == (201, kube.config_map("e", server.revision(), stamps))
    binary = await server.request("POST", CM, json={"metadata": {"name": "b"}, "binaryData": {"x": "AAEC"}})
    assert binary.json()["binaryData"] == {"x": "AAEC"}


UNKNOWN = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": 1}, "x": 1, "y": {"z": 2}}


@pytest.mark.parametrize(("mode", "code", "warnings"), [
    ("Warn", 201, ['299 - "unknown field \\"metadata.bogus\\""', '299 - "unknown field \\"x\\""',
                   '299 - "unknown field \\"y\\""']),
    ("", 201, ['299 - "unknown field \\"metadata.bogus\\""', '299 - "unknown field \\"x\\""',
               '299 - "unknown field \\"y\\""']),
    ("Ignore", 201, []),
], ids=["warn", "default-warn", "ignore"])
async def test_field_validation_warn_and_ignore(server: Server, mode: str, code: int, warnings: list[str]) -> None:
    query = f"?fieldValidation={mode}" if mode else ""
    resp = await server.request("POST", f"{CM}{query}", json=UNKNOWN)
    assert resp.status == code
    assert resp.headers.getall("Warning", []) == warnings
    assert resp.json() == kube.config_map("a", server.revision(), kube.stamped(resp.json()))
    put = await server.request("PUT", f"{CM}/a{query}", json={**UNKNOWN, "data": {"k": "v"}})
    assert (put.status, put.headers.getall("Warning", [])) == (200, warnings)


async def test_field_validation_strict_and_invalid(server: Server) -> None:
    revision = server.revision()
    strict = await server.request("POST", f"{CM}?fieldValidation=Strict", json=UNKNOWN)
    assert (strict.status, strict.json()) == (400, kube.bad_request(
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "metadata.bogus", unknown field "x", unknown field "y"'))
    duplicate = await server.request("POST", f"{CM}?fieldValidation=Strict", body=b'{"metadata":{"name":"d"},'
                                     b'"data":{"a":"1","a":"2"}}', headers={"Content-Type": "application/json"})
    assert (duplicate.status, duplicate.json()) == (400, kube.bad_request(
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.a"'))
    bogus = await server.request("POST", f"{CM}?fieldValidation=Loose", json={"metadata": {"name": "a"}})
    assert (bogus.status, bogus.json()) == (422, kube.invalid_option(
        "CreateOptions", "fieldValidation", "FieldValueNotSupported",
        'Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"'))
    assert server.revision() == revision


@pytest.mark.parametrize(("body", "message"), [
    ({"metadata": {"name": "a"}, "data": {"k": 1}}, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
     "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"),
    ({"metadata": {"name": 7}}, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
    ({"metadata": {"name": "a"}, "data": ["k"]}, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
     "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}},
     "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; "
     "json parse error: kind 'Secret' is not 'ConfigMap'"),
    ({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "a"}},
     "the API version in the data (v2) does not match the expected API version (v1)"),
    ({"metadata": {"name": "a", "namespace": "kube-system"}},
     "the namespace of the provided object does not match the namespace sent on the request"),
], ids=["data-type", "name-type", "map-type", "kind", "api-version", "namespace"])
async def test_bodies_that_do_not_fit_the_path_are_400(server: Server, body: Obj, message: str) -> None:
    revision = server.revision()
    resp = await server.request("POST", CM, json=body)
    assert (resp.status, resp.content_type, resp.json()) == (400, "application/json", kube.bad_request(message))
    await server.create(CM, {"metadata": {"name": "a"}})
    put = await server.request("PUT", f"{CM}/a", json=body)
    assert (put.status, put.json()) == (400, kube.bad_request(message))
    assert server.revision() == revision + 1


async def test_cluster_scoped_body_namespace_is_cleared(server: Server) -> None:
    """EnsureObjectNamespaceMatchesRequestNamespace: a cluster-scoped object's namespace is dropped."""
    resp = await server.request("POST", "/api/v1/namespaces", json={"metadata": {"name": "n", "namespace": "x"}})
    assert (resp.status, "namespace" in resp.json()["metadata"]) == (201, False)


@pytest.mark.parametrize("headers", [{}, {"Content-Type": "application/json;charset=utf-8"},
                                     {"Content-Type": "application/json;"}, {"Content-Type": "Application/JSON"}],
                         ids=["no-content-type", "charset", "trailing-semicolon", "case"])
async def test_body_without_content_type_is_json(server: Server, headers: dict[str, str]) -> None:
    resp = await server.request("POST", CM, body=b'{"metadata":{"name":"a"}}', headers=headers)
    assert (resp.status, resp.json()) == (201, kube.config_map("a", server.revision(), kube.stamped(resp.json())))


async def test_large_body_is_read_whole(server: Server) -> None:
    """A body that arrives in many TCP segments (here 900 KB) is read to its end, not cut at the first."""
    value = "x" * 900_000
    resp = await server.request("POST", CM, json={"metadata": {"name": "big"}, "data": {"k": value}})
    assert (resp.status, resp.json()["data"]) == (201, {"k": value})
