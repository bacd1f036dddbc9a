"""The pytest plugin (capstan/testing/plugin.py) as a project's test run sees it: pytester runs small test files
with it in a fresh pytest process (in-process runs drop the kubernetes modules they import, leaving this
process two classes of each model), against a real `capstan serve` it starts, or against this run's own server
when pointed there with --capstan-kubeconfig or CAPSTAN_KUBECONFIG.

Several checks share one inner session (each start costs ~1 s): inner tests run in file order, so a later one
checks what an earlier one's fixtures left behind.
"""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest
from kubernetes import client

pytest_plugins = ["pytester"]

STARTED = "capstan: served https://127.0.0.1:"
INNER = ("-p", "no:cacheprovider", "-p", "no:asyncio", "--durations=3")  # the inner runs need neither
FIXTURES = textwrap.dedent('''
    import json
    from pathlib import Path

    import pytest
    from kubernetes import client

    SEEN = {}
    CRD = """
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gadgets.plugin.example.com}
    spec:
      group: plugin.example.com
      scope: Namespaced
      names: {plural: gadgets, singular: gadget, kind: Gadget}
      versions:
      - {name: v1, served: true, storage: true,
         schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
    ---
    apiVersion: plugin.example.com/v1
    kind: Gadget
    metadata: {name: g}
    spec: {size: 1}
    """


    def test_admin_client_over_https(capstan_cluster, capstan_kubeconfig, k8s_client):
        assert capstan_cluster.server is not None and capstan_cluster.kubeconfig == capstan_kubeconfig
        assert k8s_client.configuration.host.startswith("https://127.0.0.1:")
        review = client.AuthenticationV1Api(k8s_client).create_self_subject_review({})
        assert "system:masters" in review.status.user_info.groups


    def test_namespace_is_fresh(capstan_namespace, k8s_client):
        core = client.CoreV1Api(k8s_client)
        assert core.read_namespace(capstan_namespace).status.phase == "Active"
        assert core.list_namespaced_config_map(capstan_namespace, label_selector="mine").items == []
        SEEN["namespace"] = capstan_namespace


    def test_namespace_was_deleted(k8s_client):
        try:
            gone = client.CoreV1Api(k8s_client).read_namespace(SEEN["namespace"])
        except client.ApiException as err:
            assert err.status == 404
        else:
            assert gone.metadata.deletion_timestamp is not None


    def test_apply_crd_and_object(capstan_apply, capstan_namespace, tmp_path):
        crd, gadget = capstan_apply(CRD, namespace=capstan_namespace)
        assert crd["kind"] == "CustomResourceDefinition"
        assert gadget["metadata"]["namespace"] == capstan_namespace
        manifest = tmp_path / "gadget.yaml"
        manifest.write_text(CRD.replace("size: 1", "size: 2"))
        again = capstan_apply(manifest, namespace=capstan_namespace)[1]
        assert (again["metadata"]["uid"], again["spec"]) == (gadget["metadata"]["uid"], {"size": 2})
        assert [m["manager"] for m in again["metadata"]["managedFields"]] == ["capstan-pytest"]
        with pytest.raises(ValueError, match='does not match the namespace'):
            capstan_apply({**gadget, "metadata": {"name": "g", "namespace": "elsewhere"}}, capstan_namespace)


    def test_service_account_holds_its_rules(capstan_service_account, capstan_namespace):
        bot = capstan_service_account("bot", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
                                      cluster_rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
        assert bot.username == f"system:serviceaccount:{capstan_namespace}:bot"
        with bot.api_client() as api:
            core = client.CoreV1Api(api)
            names = [c.metadata.name for c in core.list_namespaced_config_map(capstan_namespace).items]
            assert "kube-root-ca.crt" in names
            core.list_node()
            with pytest.raises(client.ApiException) as refused:
                core.list_namespaced_secret(capstan_namespace)
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"] == (
            f'secrets is forbidden: User "{bot.username}" cannot list resource "secrets" in API group ""'
            f' in the namespace "{capstan_namespace}"')
        SEEN["cluster role"] = f"capstan-test:{capstan_namespace}:bot"


    def test_service_account_cluster_role_was_removed(k8s_client):
        with pytest.raises(client.ApiException) as gone:
            client.RbacAuthorizationV1Api(k8s_client).read_cluster_role(SEEN["cluster role"])
        assert gone.value.status == 404


    def test_user_holds_its_rules(capstan_user, capstan_namespace):
        alice = capstan_user("alice", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
                             groups=["devs"])
        with alice.api_client() as api:
            review = client.AuthenticationV1Api(api).create_self_subject_review({})
            assert (review.status.user_info.username, review.status.user_info.groups) == (
                "alice", ["devs", "system:authenticated"])
            core = client.CoreV1Api(api)
            assert core.list_namespaced_config_map(capstan_namespace).items
            with pytest.raises(client.ApiException) as refused:
                core.list_namespaced_config_map("default")
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"] == (
            'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group ""'
            ' in the namespace "default"')


    def test_lightkube(k8s_lightkube, capstan_namespace):
        from lightkube.resources.core_v1 import Namespace

        assert k8s_lightkube.get(Namespace, capstan_namespace).metadata.name == capstan_namespace
''')


def test_fixtures_against_a_started_server(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_fixtures=FIXTURES)
    result = pytester.runpytest_subprocess(*INNER)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([f"{STARTED}* after * s (data dir *)"])


@pytest.mark.parametrize("how", ["option", "environment"])
def test_an_existing_cluster(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str,
                             capstan_kubeconfig: Path, capstan_namespace: str, k8s_client: client.ApiClient) -> None:
    marker = uuid.uuid4().hex
    client.CoreV1Api(k8s_client).create_namespaced_config_map(
        capstan_namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="marker"), data={"marker": marker}))
    pytester.makepyfile(test_existing=textwrap.dedent(f'''
        from kubernetes import client

        def test_sees_the_outer_cluster(capstan_cluster, capstan_namespace, k8s_client):
            assert capstan_cluster.server is None
            core = client.CoreV1Api(k8s_client)
            assert core.read_namespaced_config_map("marker", {capstan_namespace!r}).data == {{"marker": {marker!r}}}
            core.create_namespaced_config_map(capstan_namespace, {{"metadata": {{"name": "inner"}}}})
            open("inner-namespace", "w").write(capstan_namespace)
    '''))
    if how == "option":
        monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
        result = pytester.runpytest_subprocess(*INNER, f"--capstan-kubeconfig={capstan_kubeconfig}")
    else:
        monkeypatch.setenv("CAPSTAN_KUBECONFIG", str(capstan_kubeconfig))
        result = pytester.runpytest_subprocess(*INNER)
    result.assert_outcomes(passed=1)
    assert STARTED not in result.stdout.str()
    inner = (pytester.path / "inner-namespace").read_text()
    try:
        metadata = client.CoreV1Api(k8s_client).read_namespace(inner).metadata
    except client.ApiException as err:
        assert err.status == 404  # already gone
    else:
        assert metadata is not None and metadata.deletion_timestamp is not None


def test_insecure_server(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_insecure=textwrap.dedent('''
        from kubernetes import client

        def test_plain_http(capstan_cluster, k8s_client, capstan_namespace):
            assert capstan_cluster.insecure
            assert k8s_client.configuration.host.startswith("http://127.0.0.1:")
            assert client.CoreV1Api(k8s_client).read_namespace(capstan_namespace).status.phase == "Active"

        def test_no_rbac_to_test(capstan_service_account):
            raise AssertionError("not skipped")

        def test_no_audit_to_read(capstan_requests):
            raise AssertionError("not skipped")

        def test_faults_all_the_same(capstan_faults, k8s_client):
            capstan_faults.inject(500, verb="list", resource="namespaces")
            try:
                client.CoreV1Api(k8s_client).list_namespace()
            except client.ApiException as err:
                assert err.status == 500
            else:
                raise AssertionError("not refused")
    '''))
    result = pytester.runpytest_subprocess(*INNER, "--capstan-insecure", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["capstan: served http://127.0.0.1:*",
                                 "*--capstan-insecure allows every request: RBAC cannot be tested*",
                                 "*capstan_requests reads the audit log, which a server started with*"])


@pytest.mark.parametrize(("args", "says"), [
    (["--capstan-serve-arg=--no-such-flag"], ["*capstan serve exited with 2; the end of *", "*--no-such-flag*"]),
    (["--capstan-kubeconfig=/nonexistent/kubeconfig"], ["*--capstan-kubeconfig / $CAPSTAN_KUBECONFIG: no file *"]),
])
def test_a_cluster_that_cannot_be_had(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                      says: list[str]) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_nothing="def test_it(k8s_client):\n    pass\n")
    result = pytester.runpytest_subprocess(*INNER, *args)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(says)


def test_the_plugin_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--capstan-kubeconfig=PATH*", "*--capstan-insecure*"])
