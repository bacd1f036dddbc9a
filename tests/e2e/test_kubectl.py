"""The real kubectl against a real `capstan serve`: what a user types, and what they see.

Expected output is kubectl's own against kube-apiserver (kubectl formats it; the server decides the data, the
columns, the Status messages). The dispatcher runs the kubectl matching the server's /version, 1.28's;
kubectl.1.32 and kubectl.1.33 cover newer clients and discovery formats (aggregated discovery v2beta1 and v2).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Capstan, Kubectl, Obj, dns_label, start_capstan, stop_capstan, write_kubeconfig

PINNED = ["1.28", "1.32", "1.33"]  # the server's own minor, and the newer kubectls we test
AGE = re.compile(r"^\d+[smhd]")
PROTOBUF_SENT = "Content-Type: application/vnd.kubernetes.protobuf"


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def tables(text: str) -> list[list[dict[str, str]]]:
    """kubectl's table output as rows of {column: cell}; several kinds print several tables, blank-line apart.

    Columns are cut where the header's words start (a cell may be empty, e.g. SHORTNAMES).
    """
    out = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        header, *rows = block.splitlines()
        starts = [m.start() for m in re.finditer(r"\S+", header)]
        names = header.split()
        ends = [*starts[1:], None]
        out.append([{name: row[s:e].strip() for name, s, e in zip(names, starts, ends, strict=True)} for row in rows])
    return out


def table(text: str) -> list[dict[str, str]]:
    (only,) = tables(text)
    return only


def fill(text: str, **values: str) -> str:
    """Put values into {name} placeholders, leaving kubectl's own braces (jsonpath) alone."""
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def header(text: str) -> list[str]:
    return text.splitlines()[0].split()


# -- version and discovery -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, *PINNED])
def test_version_reports_server_1_28(kubectl: Kubectl, version: str | None) -> None:
    """The unpinned kubectl is the dispatcher, which runs the kubectl matching the server: 1.28's."""
    ran = kubectl("version", "-o", "json", version=version)
    assert ran.code == 0, ran.err
    shown = json.loads(ran.out)
    server = shown["serverVersion"]
    assert (server["major"], server["minor"], server["gitVersion"]) == ("1", "28", "v1.28.15")
    if version is None:
        assert shown["clientVersion"]["minor"] == "28"


API_RESOURCES = [  # the core/v1 kinds; the named groups' follow them
    {"NAME": name, "SHORTNAMES": short, "APIVERSION": "v1", "NAMESPACED": namespaced, "KIND": kind}
    for name, short, namespaced, kind in [
        ("bindings", "", "true", "Binding"), ("componentstatuses", "cs", "false", "ComponentStatus"),
        ("configmaps", "cm", "true", "ConfigMap"), ("endpoints", "ep", "true", "Endpoints"),
        ("events", "ev", "true", "Event"), ("limitranges", "limits", "true", "LimitRange"),
        ("namespaces", "ns", "false", "Namespace"), ("nodes", "no", "false", "Node"),
        ("persistentvolumeclaims", "pvc", "true", "PersistentVolumeClaim"),
        ("persistentvolumes", "pv", "false", "PersistentVolume"), ("pods", "po", "true", "Pod"),
        ("podtemplates", "", "true", "PodTemplate"),
        ("replicationcontrollers", "rc", "true", "ReplicationController"),
        ("resourcequotas", "quota", "true", "ResourceQuota"), ("secrets", "", "true", "Secret"),
        ("serviceaccounts", "sa", "true", "ServiceAccount"), ("services", "svc", "true", "Service"),
    ]
]


@pytest.mark.parametrize("version", [None, *PINNED])
def test_api_resources_lists_the_served_kinds(kubectl: Kubectl, version: str | None) -> None:
    ran = kubectl("api-resources", version=version)
    assert ran.code == 0, ran.err
    assert header(ran.out) == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert [row for row in table(ran.out) if row["APIVERSION"] == "v1"] == API_RESOURCES


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList"


@pytest.mark.parametrize(("version", "discovery"), [("1.28", "v2beta1"), ("1.32", "v2"), ("1.33", "v2")])
def test_discovery_is_aggregated_in_the_version_kubectl_asks_for(capstan: Capstan, tmp_path: Path, version: str,
                                                                  discovery: str) -> None:
    kubectl = Kubectl(capstan.kubeconfig, tmp_path / "cache")  # an empty cache: discovery goes to the server
    ran = kubectl("api-resources", "-o", "name", "-v=8", version=version)
    core = [line for line in ran.out.splitlines() if "." not in line]  # core/v1 names have no group suffix
    assert (ran.code, core) == (0, [r["NAME"] for r in API_RESOURCES]), ran.err
    assert "/api?timeout=" in ran.err and "/apis?timeout=" in ran.err
    assert f"Content-Type: {AGGREGATED.format(discovery)}" in ran.err
    assert "/api/v1?" not in ran.err  # no per-version legacy discovery round trips


@pytest.mark.parametrize(
    ("args", "out"),
    [
        (["api-resources", "--namespaced=false", "-o", "name"], [
            r["NAME"] for r in API_RESOURCES if r["NAMESPACED"] == "false"]),
        (["api-resources", "--namespaced=true", "-o", "name"], [
            r["NAME"] for r in API_RESOURCES if r["NAMESPACED"] == "true"]),
        (["api-resources", "--api-group=", "-o", "name"], [r["NAME"] for r in API_RESOURCES]),
        (["api-versions"], ["v1"]),
    ],
    ids=["cluster-scoped", "namespaced", "core-group", "api-versions"],
)
def test_discovery_filters(kubectl: Kubectl, args: list[str], out: list[str]) -> None:
    ran = kubectl(*args)
    core = [line for line in ran.out.splitlines() if "." not in line and "/" not in line]  # the core group's
    assert (ran.code, core, ran.err) == (0, out, "")


# -- get ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seeded(capstan: Capstan) -> str:
    """A namespace holding two ConfigMaps and a Secret, shared by the read-only get tests."""
    ns = dns_label("seeded")
    capstan.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    base = f"/api/v1/namespaces/{ns}"
    capstan.create(f"{base}/configmaps", {"metadata": {"name": "alpha", "labels": {"app": "web", "tier": "front",
                                                                                    "seed": ns}},
                                          "data": {"a": "1", "b": "2"}})
    capstan.create(f"{base}/configmaps", {"metadata": {"name": "beta", "labels": {"app": "db", "seed": ns}},
                                          "data": {"c": "3"}})
    capstan.create(f"{base}/secrets", {"metadata": {"name": "gamma"}, "data": {"token": b64("s3cret")}})
    return ns


CM = ["NAME", "DATA", "AGE"]
ALPHA, BETA = {"NAME": "alpha", "DATA": "2"}, {"NAME": "beta", "DATA": "1"}

# (args, header, rows without AGE); {ns} is the seeded namespace.
GET_TABLES: list[tuple[list[str], list[str], list[dict[str, str]]]] = [
    (["get", "cm"], CM, [ALPHA, BETA]),
    (["get", "configmaps"], CM, [ALPHA, BETA]),
    (["get", "configmap", "beta"], CM, [BETA]),
    (["get", "cm", "-o", "wide"], CM, [ALPHA, BETA]),
    (["get", "cm", "--chunk-size=1"], CM, [ALPHA, BETA]),  # two pages: limit=1 and continue
    (["get", "cm", "-l", "app=web"], CM, [ALPHA]),
    (["get", "cm", "-l", "app in (web,db),!tier"], CM, [BETA]),
    (["get", "cm", "-l", "app notin (web)"], CM, [BETA]),
    (["get", "cm", "--field-selector", "metadata.name=beta"], CM, [BETA]),
    (["get", "cm", "--show-labels"], [*CM, "LABELS"], [
        {**ALPHA, "LABELS": "app=web,seed={ns},tier=front"}, {**BETA, "LABELS": "app=db,seed={ns}"}]),
    (["get", "cm", "-A", "-l", "seed={ns}"], ["NAMESPACE", *CM], [
        {"NAMESPACE": "{ns}", **ALPHA}, {"NAMESPACE": "{ns}", **BETA}]),
    (["get", "secrets"], ["NAME", "TYPE", "DATA", "AGE"], [{"NAME": "gamma", "TYPE": "Opaque", "DATA": "1"}]),
    (["get", "ns", "{ns}"], ["NAME", "STATUS", "AGE"], [{"NAME": "{ns}", "STATUS": "Active"}]),
    (["get", "ns", "-l", "kubernetes.io/metadata.name={ns}"], ["NAME", "STATUS", "AGE"],
     [{"NAME": "{ns}", "STATUS": "Active"}]),
]


@pytest.mark.parametrize(("args", "columns", "rows"), GET_TABLES, ids=[" ".join(a) for a, _, _ in GET_TABLES])
def test_get_table(kubectl: Kubectl, seeded: str, args: list[str], columns: list[str],
                   rows: list[dict[str, str]]) -> None:
    ran = kubectl(*[fill(a, ns=seeded) for a in args], "-n", seeded)
    assert ran.code == 0, ran.err
    assert header(ran.out) == columns
    got = table(ran.out)
    assert all(AGE.match(row.pop("AGE")) for row in got), ran.out
    assert got == [{k: fill(v, ns=seeded) for k, v in row.items()} for row in rows]


@pytest.mark.parametrize("version", ["1.28", "1.33"])
def test_get_table_with_other_kubectl_versions(kubectl: Kubectl, seeded: str, version: str) -> None:
    ran = kubectl("get", "cm", "-n", seeded, "-l", "app", version=version)
    assert ran.code == 0, ran.err
    assert [(r["NAME"], r["DATA"]) for r in table(ran.out)] == [("alpha", "2"), ("beta", "1")]


def test_get_several_kinds_prints_a_table_each(kubectl: Kubectl, seeded: str) -> None:
    ran = kubectl("get", "cm,secret", "-n", seeded)
    assert ran.code == 0, ran.err
    cms, secrets = tables(ran.out)
    assert [r["NAME"] for r in cms] == ["configmap/alpha", "configmap/beta"]
    assert [(r["NAME"], r["TYPE"]) for r in secrets] == [("secret/gamma", "Opaque")]


def test_get_in_an_empty_namespace(kubectl: Kubectl, namespace: str) -> None:
    assert kubectl("get", "cm", "-n", namespace) == (0, "", f"No resources found in {namespace} namespace.\n")


def _check_alpha(obj: Obj, ns: str) -> bool:
    assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap")
    meta = obj["metadata"]
    assert (meta["name"], meta["namespace"]) == ("alpha", ns)
    assert meta["labels"] == {"app": "web", "tier": "front", "seed": ns}
    assert re.fullmatch(r"[1-9]\d*", meta["resourceVersion"])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert obj["data"] == {"a": "1", "b": "2"}
    return True


def _check_list(obj: Obj, ns: str) -> bool:
    assert (obj["apiVersion"], obj["kind"]) == ("v1", "List")
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in obj["items"]] == [
        ("v1", "ConfigMap", "alpha"), ("v1", "ConfigMap", "beta")]
    return _check_alpha(obj["items"][0], ns)


# (args, parse stdout, check the parsed value against the seeded namespace)
OUTPUTS: list[tuple[list[str], Callable[[str], Any], Callable[[Any, str], object]]] = [
    (["get", "cm", "alpha", "-o", "yaml"], yaml.safe_load, _check_alpha),
    (["get", "cm", "alpha", "-o", "json"], json.loads, _check_alpha),
    (["get", "cm", "-o", "json"], json.loads, _check_list),
    (["get", "cm", "-o", "yaml"], yaml.safe_load, _check_list),
    (["get", "cm", "alpha", "-o", "name"], str, lambda out, ns: out == "configmap/alpha\n"),
    (["get", "cm", "-o", "jsonpath={.items[*].data}"], str,
     lambda out, ns: out == '{"a":"1","b":"2"} {"c":"3"}'),
    (["get", "cm", "-o", "custom-columns=N:.metadata.name,A:.data.a,NS:.metadata.namespace"], table,
     lambda rows, ns: rows == [{"N": "alpha", "A": "1", "NS": ns}, {"N": "beta", "A": "<none>", "NS": ns}]),
    (["get", "secret", "gamma", "-o", "jsonpath={.data.token}"], str,
     lambda out, ns: out == b64("s3cret")),
    (["get", "ns", "{ns}", "-o", "json"], json.loads,
     lambda obj, ns: (obj["kind"], obj["status"], obj["spec"], obj["metadata"]["labels"]) == (
         "Namespace", {"phase": "Active"}, {"finalizers": ["kubernetes"]}, {"kubernetes.io/metadata.name": ns})),
]


@pytest.mark.parametrize(("args", "parse", "check"), OUTPUTS, ids=[" ".join(a) for a, _, _ in OUTPUTS])
def test_get_output_formats(kubectl: Kubectl, seeded: str, args: list[str], parse: Callable[[str], Any],
                            check: Callable[[Any, str], object]) -> None:
    ran = kubectl(*[fill(a, ns=seeded) for a in args], "-n", seeded)
    assert ran.code == 0, ran.err
    assert check(parse(ran.out), seeded), ran.out


def test_get_watch_prints_rows_as_objects_change(kubectl: Kubectl, capstan: Capstan, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    capstan.create(base, {"metadata": {"name": "first"}, "data": {"a": "1"}})
    # --request-timeout bounds the client; kube-apiserver ignores ?timeout= on watches (only timeoutSeconds counts).
    watch = kubectl.start("get", "cm", "-n", namespace, "-w", "--output-watch-events", "--request-timeout=30s")
    try:
        watch.expect(r"^EVENT\s+NAME\s+DATA\s+AGE")
        watch.expect(r"^ADDED\s+first\s+1\s")
        second = capstan.create(base, {"metadata": {"name": "second"}, "data": {"a": "1", "b": "2"}})
        watch.expect(r"^ADDED\s+second\s+2\s")
        second["data"]["c"] = "3"
        assert capstan.request("PUT", f"{base}/second", second)[0] == 200
        watch.expect(r"^MODIFIED\s+second\s+3\s")
        assert capstan.request("DELETE", f"{base}/first")[0] == 200
        watch.expect(r"^DELETED\s+first\s+1\s")
    finally:
        watch.stop()


def test_get_watch_only_shows_only_changes(kubectl: Kubectl, capstan: Capstan, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    capstan.create(base, {"metadata": {"name": "before"}})
    watch = kubectl.start("get", "cm", "-n", namespace, "--watch-only", "--request-timeout=30s", "-v=8")
    try:
        # Once the watch request is on its way the list is done: "after" is either in the watch or replayed to it.
        watch.stderr_expect(r"GET \S+/configmaps\?\S*watch=true")
        capstan.create(base, {"metadata": {"name": "after"}, "data": {"k": "v"}})
        watch.expect(r"^after\s+1\s")
    finally:
        ran = watch.stop()
    assert "before" not in ran.out


def test_sigterm_is_not_held_up_by_a_watch_whose_client_left(tmp_path: Path) -> None:
    """A watch ends when its client disconnects (kube-apiserver's handler returns on req.Context().Done()), so
    a kubectl get -w killed earlier leaves nothing behind to delay `capstan serve`'s exit on SIGTERM."""
    data = tmp_path / "data"
    serving = start_capstan(data)
    try:
        write_kubeconfig(data, tmp_path / "kubeconfig")
        Capstan(serving.url, data, tmp_path / "kubeconfig", serving.log).create(
            "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "seen"}})
        watch = Kubectl(tmp_path / "kubeconfig", tmp_path / "cache").start("get", "cm", "-w", "-v=8")
        try:
            watch.expect(r"^seen\s")
            watch.stderr_expect(r"GET \S+/configmaps\?\S*watch=true")
            time.sleep(0.5)  # the watch reaches the server
        finally:
            watch.stop()
        time.sleep(0.5)
    finally:
        exited = stop_capstan(serving, timeout=5)
    assert exited == 0, f"capstan serve: exit code {exited} (None: still running 5s after SIGTERM)"


# -- create ------------------------------------------------------------------------------------------------------------

BINARY = b"\xff\xfe\x00binary"


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "notes.txt").write_text("line1\nline2\n")
    (tmp / "blob.bin").write_bytes(BINARY)
    return {"txt": str(tmp / "notes.txt"), "bin": str(tmp / "blob.bin")}


def _docker_config(obj: Obj) -> Obj:
    return json.loads(base64.b64decode(obj["data"][".dockerconfigjson"]))  # type: ignore[no-any-return]


# (kubectl args, kind path segment, name, the fields expected back from the server)
CREATES: list[tuple[list[str], str, str, Callable[[Obj], object]]] = [
    (["create", "configmap", "literals", "--from-literal=a=1", "--from-literal=b=two words"], "configmaps",
     "literals", lambda o: o["data"] == {"a": "1", "b": "two words"}),
    (["create", "configmap", "files", "--from-file={txt}", "--from-file=blob={bin}"], "configmaps", "files",
     lambda o: (o["data"], o["binaryData"]) == ({"notes.txt": "line1\nline2\n"}, {"blob": b64(BINARY)})),
    (["create", "secret", "generic", "opaque", "--from-literal=pw=hunter2", "--from-literal=empty="], "secrets",
     "opaque", lambda o: (o["type"], o["data"]) == ("Opaque", {"pw": b64("hunter2"), "empty": ""})),
    (["create", "secret", "generic", "typed", "--type=example.com/custom", "--from-file=blob={bin}"], "secrets",
     "typed", lambda o: (o["type"], o["data"]) == ("example.com/custom", {"blob": b64(BINARY)})),
    (["create", "secret", "docker-registry", "registry", "--docker-server=r.example.com", "--docker-username=u",
      "--docker-password=p"], "secrets", "registry",
     lambda o: o["type"] == "kubernetes.io/dockerconfigjson"
     and _docker_config(o)["auths"]["r.example.com"]["auth"] == b64("u:p")),
]


@pytest.mark.parametrize(("args", "resource", "name", "check"), CREATES, ids=[name for _, _, name, _ in CREATES])
def test_create_round_trips_through_protobuf(kubectl: Kubectl, capstan: Capstan, namespace: str, tmp_path: Path,
                                             args: list[str], resource: str, name: str,
                                             check: Callable[[Obj], object]) -> None:
    files = _files(tmp_path)
    kind = resource.removesuffix("s")
    ran = kubectl(*[fill(a, **files) for a in args], "-n", namespace, "-v=8", version="1.32")
    assert (ran.code, ran.out) == (0, f"{kind}/{name} created\n"), ran.err
    assert PROTOBUF_SENT in ran.err  # kubectl 1.32 sends these bodies as protobuf
    code, stored = capstan.get(f"/api/v1/namespaces/{namespace}/{resource}/{name}")
    assert code == 200, stored
    assert check(stored), stored
    shown = json.loads(kubectl("get", resource, name, "-n", namespace, "-o", "json", version="1.32").out)
    assert check(shown), shown
    assert shown["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


@pytest.mark.parametrize("version", ["1.28", "1.32", "1.33"])
def test_create_namespace(kubectl: Kubectl, capstan: Capstan, request: pytest.FixtureRequest, version: str) -> None:
    name = dns_label(request.node.name)
    ran = kubectl("create", "namespace", name, version=version)
    assert ran[:2] == (0, f"namespace/{name} created\n"), ran.err
    code, ns = capstan.get(f"/api/v1/namespaces/{name}")
    assert (code, ns["status"], ns["metadata"]["labels"]) == (
        200, {"phase": "Active"}, {"kubernetes.io/metadata.name": name})


@pytest.mark.parametrize("version", ["1.28", "1.33"])
def test_create_with_other_kubectl_versions(kubectl: Kubectl, capstan: Capstan, namespace: str, version: str) -> None:
    ran = kubectl("create", "secret", "generic", "s", "--from-literal=k=v", "-n", namespace, version=version)
    assert ran[:2] == (0, "secret/s created\n"), ran.err
    assert capstan.get(f"/api/v1/namespaces/{namespace}/secrets/s")[1]["data"] == {"k": b64("v")}


def test_create_dry_run_server_returns_the_object_without_storing_it(kubectl: Kubectl, capstan: Capstan,
                                                                    namespace: str) -> None:
    ran = kubectl("create", "cm", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "json", "-n", namespace)
    assert ran.code == 0, ran.err
    shown = json.loads(ran.out)
    assert (shown["metadata"]["name"], shown["data"]) == ("dry", {"a": "b"})
    assert "uid" in shown["metadata"] and "resourceVersion" not in shown["metadata"]
    assert capstan.get(f"/api/v1/namespaces/{namespace}/configmaps/dry")[0] == 404


def _manifest(ns: str) -> str:
    return f"""\
apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {ns}
  labels: {{tier: web}}
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: {ns}
stringData:
  token: abc
"""


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_create_f_several_documents(kubectl: Kubectl, capstan: Capstan, request: pytest.FixtureRequest,
                                    tmp_path: Path, stdin: bool) -> None:
    ns = dns_label(request.node.name)
    manifest = tmp_path / "all.yaml"
    manifest.write_text(_manifest(ns))
    if stdin:
        ran = kubectl("create", "-f", "-", "--validate=false", input=_manifest(ns))
    else:
        ran = kubectl("create", "-f", str(manifest), "--validate=false")
    assert ran[:2] == (0, f"namespace/{ns} created\nconfigmap/settings created\nsecret/token created\n"), ran.err
    assert capstan.get(f"/api/v1/namespaces/{ns}/configmaps/settings")[1]["data"] == {"mode": "fast"}
    secret = capstan.get(f"/api/v1/namespaces/{ns}/secrets/token")[1]
    assert (secret["data"], "stringData" in secret) == ({"token": b64("abc")}, False)

    again = kubectl("create", "-f", str(manifest), "--validate=false")
    assert again.code == 1
    assert again.err.splitlines() == [
        f'Error from server (AlreadyExists): error when creating "{manifest}": namespaces "{ns}" already exists',
        f'Error from server (AlreadyExists): error when creating "{manifest}": configmaps "settings" already exists',
        f'Error from server (AlreadyExists): error when creating "{manifest}": secrets "token" already exists',
    ]


def test_create_f_validates_against_openapi(kubectl: Kubectl, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    ns = dns_label(request.node.name)
    manifest = tmp_path / "all.yaml"
    manifest.write_text(_manifest(ns))
    ran = kubectl("create", "-f", str(manifest))  # --validate=strict by default: needs the server's OpenAPI
    assert ran[:2] == (0, f"namespace/{ns} created\nconfigmap/settings created\nsecret/token created\n"), ran.err
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  namespace: {ns}\nspec: {{}}\n")
    ran = kubectl("create", "-f", str(bad))
    assert ran.code == 1
    assert 'unknown field "spec"' in ran.err


# -- replace -----------------------------------------------------------------------------------------------------------


def test_replace_f(kubectl: Kubectl, capstan: Capstan, namespace: str, tmp_path: Path) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    created = capstan.create(base, {"metadata": {"name": "conf"}, "data": {"k": "v1"}})
    obj = yaml.safe_load(kubectl("get", "cm", "conf", "-n", namespace, "-o", "yaml").out)
    obj["data"] = {"k": "v2", "extra": "x"}
    path = tmp_path / "conf.yaml"
    path.write_text(yaml.safe_dump(obj))

    assert kubectl("replace", "-f", str(path), "--validate=false") == (0, "configmap/conf replaced\n", "")
    stored = capstan.get(f"{base}/conf")[1]
    assert stored["data"] == {"k": "v2", "extra": "x"}
    assert int(stored["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert stored["metadata"]["uid"] == created["metadata"]["uid"]

    stale = kubectl("replace", "-f", str(path), "--validate=false")  # its resourceVersion is now out of date
    assert (stale.code, stale.out) == (1, "")
    assert stale.err == (
        f'Error from server (Conflict): error when replacing "{path}": Operation cannot be fulfilled on configmaps '
        '"conf": the object has been modified; please apply your changes to the latest version and try again\n')

    forced = kubectl("replace", "--force", "-f", str(path), "--validate=false")
    assert forced == (0, 'configmap "conf" deleted\nconfigmap/conf replaced\n', "")
    assert capstan.get(f"{base}/conf")[1]["metadata"]["uid"] != created["metadata"]["uid"]


def test_replace_f_validates_against_openapi(kubectl: Kubectl, capstan: Capstan, namespace: str,
                                            tmp_path: Path) -> None:
    capstan.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "conf"}})
    path = tmp_path / "conf.yaml"
    path.write_text(kubectl("get", "cm", "conf", "-n", namespace, "-o", "yaml").out)
    assert kubectl("replace", "-f", str(path)) == (0, "configmap/conf replaced\n", "")


# -- delete and wait ---------------------------------------------------------------------------------------------------


# (args, stdout, names left of a, b, c (labelled tier=web except a) and secret s)
DELETES: list[tuple[list[str], str, list[str]]] = [
    (["delete", "cm", "a"], 'configmap "a" deleted\n', ["b", "c", "s"]),
    (["delete", "configmap", "a", "b"], 'configmap "a" deleted\nconfigmap "b" deleted\n', ["c", "s"]),
    (["delete", "cm", "-l", "tier=web"], 'configmap "b" deleted\nconfigmap "c" deleted\n', ["a", "s"]),
    (["delete", "cm", "--all"], 'configmap "a" deleted\nconfigmap "b" deleted\nconfigmap "c" deleted\n', ["s"]),
    (["delete", "secret", "s"], 'secret "s" deleted\n', ["a", "b", "c"]),
    (["delete", "cm,secret", "-l", "tier=web"], 'configmap "b" deleted\nconfigmap "c" deleted\n', ["a", "s"]),
    (["delete", "cm", "nope", "--ignore-not-found"], "", ["a", "b", "c", "s"]),
    (["delete", "cm", "a", "--dry-run=server"], 'configmap "a" deleted (server dry run)\n', ["a", "b", "c", "s"]),
]


@pytest.mark.parametrize(("args", "out", "left"), DELETES, ids=[" ".join(a) for a, _, _ in DELETES])
def test_delete(kubectl: Kubectl, capstan: Capstan, namespace: str, args: list[str], out: str,
                left: list[str]) -> None:
    base = f"/api/v1/namespaces/{namespace}"
    capstan.create(f"{base}/configmaps", {"metadata": {"name": "a"}})
    for name in ("b", "c"):
        capstan.create(f"{base}/configmaps", {"metadata": {"name": name, "labels": {"tier": "web"}}})
    capstan.create(f"{base}/secrets", {"metadata": {"name": "s"}})
    assert kubectl(*args, "-n", namespace) == (0, out, "")
    names = [o["metadata"]["name"] for kind in ("configmaps", "secrets")
             for o in capstan.get(f"{base}/{kind}")[1]["items"]]
    assert names == left


def test_delete_namespace_then_wait_for_it(kubectl: Kubectl, capstan: Capstan, request: pytest.FixtureRequest) -> None:
    ns = dns_label(request.node.name)
    capstan.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    capstan.create(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "inside"}})
    # kubectl delete waits for the namespace to go (a GET, then a list and a watch from its resourceVersion).
    assert kubectl("delete", "ns", ns, timeout=20) == (0, f'namespace "{ns}" deleted\n', "")
    ran = kubectl("wait", "--for=delete", f"ns/{ns}", "--timeout=30s", timeout=40)
    assert ran.code == 0, ran.err
    assert capstan.get(f"/api/v1/namespaces/{ns}")[0] == 404
    assert capstan.get(f"/api/v1/namespaces/{ns}/configmaps")[1]["items"] == []


# (args after the object is created, code, stdout, stderr); kubectl wait lists and watches the one object.
# --for=create is kubectl 1.31's: that row runs kubectl 1.32, the others the dispatcher's (the server's 1.28).
WAITS: list[tuple[list[str], int, str, str]] = [
    (["wait", "--for=jsonpath={.data.k}=v", "cm/w", "--timeout=10s"], 0, "configmap/w condition met\n", ""),
    (["wait", "--for=create", "cm/w", "--timeout=10s"], 0, "configmap/w condition met\n", ""),
    (["wait", "--for=delete", "cm/w", "--timeout=2s"], 1, "", "error: timed out waiting for the condition on "
     "configmaps/w\n"),
    (["wait", "--for=delete", "cm/gone", "--timeout=5s"], 0, "", ""),
]


@pytest.mark.parametrize(("args", "code", "out", "err"), WAITS, ids=[a[1] + " " + a[2] for a, *_ in WAITS])
def test_wait(kubectl: Kubectl, capstan: Capstan, namespace: str, args: list[str], code: int, out: str,
              err: str) -> None:
    capstan.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "w"}, "data": {"k": "v"}})
    ran = kubectl(*args, "-n", namespace, timeout=20, version="1.32" if "--for=create" in args else None)
    assert (ran.code, ran.out) == (code, out), ran.err
    assert ran.err.endswith(err)


# -- PATCH (kubectl apply, label, annotate, edit) and OpenAPI ----------------------------------------------------------


def test_apply_f_creates_then_configures(kubectl: Kubectl, capstan: Capstan, namespace: str, tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: {ns}\ndata:\n  k: {v}\n"
    path.write_text(doc.format(ns=namespace, v="v1"))
    assert kubectl("apply", "-f", str(path), "--validate=false") == (0, "configmap/applied created\n", "")
    path.write_text(doc.format(ns=namespace, v="v2"))
    assert kubectl("apply", "-f", str(path), "--validate=false") == (0, "configmap/applied configured\n", "")
    assert kubectl("apply", "-f", str(path), "--validate=false") == (0, "configmap/applied unchanged\n", "")
    stored = capstan.get(f"/api/v1/namespaces/{namespace}/configmaps/applied")[1]
    assert stored["data"] == {"k": "v2"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]


# (args, stdout, the metadata field and its value afterwards)
METADATA_EDITS: list[tuple[list[str], str, str, dict[str, str]]] = [
    (["label", "cm", "m", "app=x"], "configmap/m labeled\n", "labels", {"app": "x", "keep": "1"}),
    (["label", "cm", "m", "keep=2", "--overwrite"], "configmap/m labeled\n", "labels", {"keep": "2"}),
    (["label", "cm", "m", "keep-"], "configmap/m unlabeled\n", "labels", {}),
    (["annotate", "cm", "m", "note=hello"], "configmap/m annotated\n", "annotations", {"note": "hello"}),
    (["label", "ns", "{ns}", "team=a"], "namespace/{ns} labeled\n", "", {}),
]


@pytest.mark.parametrize(("args", "out", "field", "want"), METADATA_EDITS,
                         ids=[" ".join(a[:4]) for a, *_ in METADATA_EDITS])
def test_label_and_annotate(kubectl: Kubectl, capstan: Capstan, namespace: str, args: list[str], out: str,
                            field: str, want: dict[str, str]) -> None:
    capstan.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "m", "labels": {"keep": "1"}}})
    ran = kubectl(*[fill(a, ns=namespace) for a in args], "-n", namespace)
    assert ran == (0, fill(out, ns=namespace), "")
    if field:
        stored = capstan.get(f"/api/v1/namespaces/{namespace}/configmaps/m")[1]
        assert stored["metadata"].get(field, {}) == want


def test_edit(kubectl: Kubectl, capstan: Capstan, namespace: str, tmp_path: Path) -> None:
    capstan.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "e"}, "data": {"k": "v1"}})
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/^  k: v1$/  k: v2/' \"$1\"\n")
    editor.chmod(0o755)
    ran = kubectl("edit", "cm", "e", "-n", namespace, "--validate=false", env={"KUBE_EDITOR": str(editor)})
    assert ran == (0, "configmap/e edited\n", "")
    assert capstan.get(f"/api/v1/namespaces/{namespace}/configmaps/e")[1]["data"] == {"k": "v2"}


# (what, what kubectl must print): the structure kubectl builds from /openapi/v3 (kinds, field names and their
# types); the descriptions' words are tests/gateway/test_openapi_descriptions.py's.
EXPLAINS = [
    ("configmap", ["FIELDS:", "binaryData\t<map[string]string>", "data\t<map[string]string>",
                   "immutable\t<boolean>", "metadata\t<ObjectMeta>"]),
    ("configmap.data", ["FIELD: data <map[string]string>", "DESCRIPTION:"]),
    ("secret.type", ["FIELD: type <string>", "DESCRIPTION:"]),
    ("namespace.status.phase", ["FIELD: phase <string>", "DESCRIPTION:"]),
    # kinds with streaming subresources (exec, proxy), whose options kinds are no schemas
    ("pod.spec.nodeName", ["FIELD: nodeName <string>", "DESCRIPTION:"]),
    ("service.spec.ports", ["FIELD: ports <[]ServicePort>", "port\t<integer> -required-"]),
    ("node.status.addresses", ["FIELD: addresses <[]NodeAddress>", "address\t<string> -required-"]),
]


@pytest.mark.parametrize(("what", "expected"), EXPLAINS, ids=[w for w, _ in EXPLAINS])
def test_explain(kubectl: Kubectl, what: str, expected: list[str]) -> None:
    ran = kubectl("explain", what)
    assert ran.code == 0, ran.err
    kind = {"configmap": "ConfigMap", "secret": "Secret", "namespace": "Namespace", "pod": "Pod", "service": "Service",
            "node": "Node"}[what.split(".")[0]]
    assert ran.out.startswith(f"KIND:       {kind}\nVERSION:    v1\n")
    for text in expected:
        assert text in ran.out
    description = ran.out.split("DESCRIPTION:\n", 1)[1].strip()
    assert description  # every explained field has a description


# -- errors ------------------------------------------------------------------------------------------------------------

RFC1123 = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
           "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")

# (args, stderr); every one exits 1 with nothing on stdout. {ns} is the test's namespace.
ERRORS: list[tuple[list[str], str]] = [
    (["get", "cm", "nope"], 'Error from server (NotFound): configmaps "nope" not found'),
    (["get", "secret", "nope"], 'Error from server (NotFound): secrets "nope" not found'),
    (["get", "ns", "nope-ns"], 'Error from server (NotFound): namespaces "nope-ns" not found'),
    (["delete", "cm", "nope"], 'Error from server (NotFound): configmaps "nope" not found'),
    (["get", "widgets"], 'error: the server doesn\'t have a resource type "widgets"'),
    (["create", "cm", "dup"], 'error: failed to create configmap: configmaps "dup" already exists'),
    (["create", "cm", "Bad_Name"], 'error: failed to create configmap: ConfigMap "Bad_Name" is invalid: '
     f'metadata.name: Invalid value: "Bad_Name": {RFC1123}'),
    (["create", "cm", "x", "-n", "missing-ns"], 'error: failed to create configmap: namespaces "missing-ns" not found'),
    (["get", "cm", "--field-selector", "data.k=v"],
     'Error from server (BadRequest): Unable to find "/v1, Resource=configmaps" that match label selector "", '
     'field selector "data.k=v": "data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'),
]


@pytest.mark.parametrize(("args", "err"), ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_error_output(kubectl: Kubectl, capstan: Capstan, namespace: str, args: list[str], err: str) -> None:
    capstan.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "dup"}})
    ran = kubectl(*args, *([] if "-n" in args else ["-n", namespace]))
    assert ran == (1, "", err + "\n")
