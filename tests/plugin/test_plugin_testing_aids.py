"""The plugin's aids for testing clients and controllers (capstan/testing/plugin.py) as a project's test run sees
them, each inner run in a fresh pytest process against a real `capstan serve`: the request log read from the
audit stream, fault injection (kube-shaped failures, dropped watches) driving real clients' retry and re-list
paths, the async clients' fixtures, and servers of a test's own (marker, --capstan-fresh, ini arguments,
controller toggles).
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

INNER = ("-p", "no:cacheprovider", "-p", "no:asyncio", "--durations=3")
ASYNC_INNER = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")

LOG_AND_FAULTS = textwrap.dedent('''
    import json
    import threading

    import pytest
    from kubernetes import client, watch

    from capstan.testing.faults import Faults


    def test_request_log(capstan_requests, capstan_namespace, k8s_client):
        core = client.CoreV1Api(k8s_client)
        core.create_namespaced_config_map(capstan_namespace, {"metadata": {"name": "a"}})
        core.read_namespaced_config_map("a", capstan_namespace)
        with pytest.raises(client.ApiException):
            core.read_namespaced_config_map("missing", capstan_namespace)
        mine = capstan_requests.find(user="kubernetes-admin")
        assert [(r.verb, r.resource, r.name, r.code) for r in mine] == [
            ("create", "configmaps", "a", 201), ("get", "configmaps", "a", 200),
            ("get", "configmaps", "missing", 404)]  # the fixture's own namespace creation is left out
        made = capstan_requests.assert_called(verb="create", resource="configmaps", namespace=capstan_namespace)
        assert made[0].uri == f"/api/v1/namespaces/{capstan_namespace}/configmaps"
        capstan_requests.assert_called(2, verb="get", resource="configmaps")
        capstan_requests.assert_not_called(verb="delete", resource="configmaps")
        with pytest.raises(AssertionError, match="expected 1 request.s. matching verb='delete', found 0"):
            capstan_requests.assert_called(1, verb="delete")
        with pytest.raises(AssertionError, match="expected no request matching name='a', found:"):
            capstan_requests.assert_not_called(name="a")
        with pytest.raises(TypeError, match="no such request field: resources"):
            capstan_requests.find(resources="configmaps")
        capstan_requests.clear()
        assert capstan_requests.find(user="kubernetes-admin") == []


    def test_a_429_is_retried_by_the_client(capstan_faults, capstan_requests, capstan_namespace, k8s_client):
        fault = capstan_faults.inject(429, verb="list", resource="configmaps", namespace=capstan_namespace,
                                      retry_after=1)
        core = client.CoreV1Api(k8s_client)
        assert core.list_namespaced_config_map(capstan_namespace).items  # urllib3 honours Retry-After on a 429
        assert fault.hits() == 1
        capstan_requests.assert_called(1, verb="list", resource="configmaps")  # the refused one never got in


    def test_a_500_reaches_the_caller(capstan_faults, capstan_namespace, k8s_client):
        capstan_faults.inject(500, verb="get", name="a", namespace=capstan_namespace, count=2)
        core = client.CoreV1Api(k8s_client)
        core.create_namespaced_config_map(capstan_namespace, {"metadata": {"name": "a"}})
        for _ in range(2):
            with pytest.raises(client.ApiException) as failed:
                core.read_namespaced_config_map("a", capstan_namespace)
            assert (failed.value.status, json.loads(failed.value.body)["reason"]) == (500, "InternalError")
        assert core.read_namespaced_config_map("a", capstan_namespace).metadata.name == "a"


    def test_a_watch_told_410_raises_it(capstan_faults, capstan_namespace, k8s_client):
        capstan_faults.inject(410, verb="watch", resource="configmaps")
        core = client.CoreV1Api(k8s_client)
        with pytest.raises(client.ApiException) as expired:
            for _ in watch.Watch().stream(core.list_namespaced_config_map, capstan_namespace,
                                          resource_version="1", timeout_seconds=5):
                pass
        assert expired.value.status == 410


    def test_a_dropped_watch_is_watched_again(capstan_faults, capstan_requests, capstan_namespace, k8s_client):
        core = client.CoreV1Api(k8s_client)
        seen, first, second = [], threading.Event(), threading.Event()

        def follow():  # the official client's Watch re-watches from the last resourceVersion when a watch ends
            for event in watch.Watch().stream(core.list_namespaced_config_map, capstan_namespace):
                name = event["object"].metadata.name
                if name in ("one", "two"):
                    seen.append(name)
                    (first if name == "one" else second).set()
                if name == "two":
                    return

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        core.create_namespaced_config_map(capstan_namespace, {"metadata": {"name": "one"}})
        assert first.wait(10)
        assert capstan_faults.drop_watches(resource="configmaps", namespace=capstan_namespace) == 1
        core.create_namespaced_config_map(capstan_namespace, {"metadata": {"name": "two"}})
        assert second.wait(10)
        follower.join(10)
        assert seen == ["one", "two"]
        capstan_requests.assert_called(2, verb="watch", resource="configmaps")


    def test_rules_go_with_the_test(capstan_faults, k8s_client):
        assert capstan_faults.rules() == []
        capstan_faults.inject(500, verb="get", count=0)
        assert [(r["code"], r["count"]) for r in capstan_faults.rules()] == [(500, 0)]


    def test_only_admins_may_inject(capstan_service_account):
        bot = capstan_service_account("bot")
        with bot.api_client() as api:
            with pytest.raises(client.ApiException) as refused:
                Faults(api).inject(500)
        assert refused.value.status == 403
        assert "/debug/capstan/faults" in json.loads(refused.value.body)["message"]
''')


def test_request_log_and_faults(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_log_and_faults=LOG_AND_FAULTS)
    result = pytester.runpytest_subprocess(*INNER)
    result.assert_outcomes(passed=7)


def test_against_an_existing_cluster_they_skip(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                               capstan_kubeconfig: object) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_skips=textwrap.dedent('''
        import pytest

        def test_log(capstan_requests):
            raise AssertionError("not skipped")

        def test_faults(capstan_faults):
            raise AssertionError("not skipped")

        @pytest.mark.capstan(fresh=True)
        def test_own(capstan_test_cluster):
            raise AssertionError("not skipped")
    '''))
    result = pytester.runpytest_subprocess(*INNER, f"--capstan-kubeconfig={capstan_kubeconfig}", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*capstan_requests needs the Capstan the plugin starts*",
                                 "*capstan_faults needs the Capstan the plugin starts*",
                                 "*asks for a Capstan of its own; --capstan-kubeconfig names an existing cluster*"])


def test_async_clients(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_async=textwrap.dedent('''
        import pytest


        @pytest.mark.asyncio
        async def test_kubernetes_asyncio(k8s_async_client, capstan_namespace):
            from kubernetes_asyncio import client

            core = client.CoreV1Api(k8s_async_client)
            await core.create_namespaced_config_map(capstan_namespace, {"metadata": {"name": "a"}})
            assert (await core.read_namespaced_config_map("a", capstan_namespace)).metadata.name == "a"


        @pytest.mark.asyncio
        async def test_lightkube_async(k8s_lightkube_async, capstan_namespace):
            from lightkube.resources.core_v1 import Namespace

            assert (await k8s_lightkube_async.get(Namespace, capstan_namespace)).metadata.name == capstan_namespace


        @pytest.mark.asyncio
        async def test_kr8s(k8s_kr8s, capstan_namespace):
            namespaces = [ns.name async for ns in k8s_kr8s.get("namespaces")]
            assert capstan_namespace in namespaces
    '''))
    result = pytester.runpytest_subprocess(*ASYNC_INNER)
    result.assert_outcomes(passed=3)


def test_servers_of_a_tests_own(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makeini(textwrap.dedent('''
        [pytest]
        capstan_serve_args = --service-cluster-ip-range=10.1.0.0/16
    '''))
    pytester.makepyfile(test_own=textwrap.dedent('''
        import time

        import pytest
        from kubernetes import client

        SEEN = {}


        def _kubernetes_ip(api):
            return client.CoreV1Api(api).read_namespaced_service("kubernetes", "default").spec.cluster_ip


        def _replica_sets(api, namespace):
            apps = client.AppsV1Api(api)
            labels = {"app": "web"}
            apps.create_namespaced_deployment(namespace, {"metadata": {"name": "web"}, "spec": {
                "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                    "containers": [{"name": "c", "image": "nginx"}]}}}})
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                found = apps.list_namespaced_replica_set(namespace).items
                if found:
                    return len(found)
                time.sleep(0.1)
            return 0


        def test_the_session_server(capstan_test_cluster, capstan_cluster, k8s_client, capstan_namespace):
            assert capstan_test_cluster is capstan_cluster
            assert _kubernetes_ip(k8s_client) == "10.1.0.1"  # the ini's arguments
            SEEN["session"] = capstan_cluster.server.url


        @pytest.mark.capstan(controllers="*", serve_args=["--service-cluster-ip-range=10.2.0.0/16"])
        def test_a_server_with_every_controller(capstan_test_cluster, k8s_client, capstan_namespace):
            assert capstan_test_cluster.own and capstan_test_cluster.server.url != SEEN["session"]
            assert _kubernetes_ip(k8s_client) == "10.2.0.1"  # the marker's arguments come last
            assert _replica_sets(k8s_client, capstan_namespace) == 1
            applied = capstan_test_cluster.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "c"}}, capstan_namespace)
            assert applied[0]["metadata"]["namespace"] == capstan_namespace
            SEEN["own"] = capstan_namespace


        def test_the_session_server_has_no_workload_controllers(k8s_client, capstan_namespace):
            assert _replica_sets(k8s_client, capstan_namespace) == 0
            with pytest.raises(client.ApiException) as gone:
                client.CoreV1Api(k8s_client).read_namespace(SEEN["own"])
            assert gone.value.status == 404  # that namespace was on the other server


        @pytest.mark.capstan(fresh=True)
        def test_a_fresh_server(capstan_test_cluster, capstan_requests, k8s_client):
            client.CoreV1Api(k8s_client).list_namespace()
            capstan_requests.assert_called(1, verb="list", resource="namespaces")
    '''))
    result = pytester.runpytest_subprocess(*INNER)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["capstan: served https://127.0.0.1:*",
                                 "capstan: started 2 server(s) for single tests, * s each on average"])


def test_every_test_fresh_and_controllers_by_option(pytester: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_fresh=textwrap.dedent('''
        from kubernetes import client

        URLS = []

        def _check(cluster, api):
            assert cluster.own
            URLS.append(cluster.server.url)
            names = [c.metadata.name for c in client.CoreV1Api(api).list_namespaced_config_map("default").items]
            assert "left-behind" not in names
            client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "left-behind"}})

        def test_one(capstan_test_cluster, k8s_client):
            _check(capstan_test_cluster, k8s_client)

        def test_two(capstan_test_cluster, k8s_client):
            _check(capstan_test_cluster, k8s_client)
            assert len(set(URLS)) == 2
    '''))
    result = pytester.runpytest_subprocess(*INNER, "--capstan-fresh", "--capstan-controllers=*")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["capstan: started 2 server(s) for single tests, * s each on average"])
    assert "capstan: served" not in result.stdout.str()  # no session server was needed


@pytest.mark.parametrize(("marker", "says"), [
    ("@pytest.mark.capstan(workers=2)", "*takes fresh=, serve_args= and controllers=; got workers*"),
    ('@pytest.mark.capstan(controllers="nosuch")', "*capstan serve exited with 2*"),
])
def test_a_marker_it_cannot_serve(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, marker: str,
                                  says: str) -> None:
    monkeypatch.delenv("CAPSTAN_KUBECONFIG", raising=False)
    pytester.makepyfile(test_marker=f"import pytest\n\n{marker}\ndef test_it(k8s_client):\n    pass\n")
    result = pytester.runpytest_subprocess(*INNER)
    assert result.ret != 0
    result.stdout.fnmatch_lines([says])
