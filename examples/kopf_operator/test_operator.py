"""The Widget operator's tests, as its author would write them with Capstan's pytest plugin.

The CRD is applied once per session (`capstan_apply`, server-side apply, waits for Established); each test gets
its own namespace (`capstan_namespace`) and runs the operator in a thread with kopf's KopfRunner under a
ServiceAccount that holds only rbac.yaml's rules (`capstan_service_account`), so a rule the operator lacks
fails here as it would in a cluster. What the operator writes is awaited with `kubernetes.watch`.
Against a real cluster: `pytest --capstan-kubeconfig ~/.kube/config examples/`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kopf.testing import KopfRunner
from kubernetes import client, watch

from capstan.testing.apply import Applier
from capstan.testing.plugin import MakeServiceAccount

HERE = Path(__file__).parent
CLUSTER_ROLE, ROLE = yaml.safe_load_all((HERE / "rbac.yaml").read_text())
WAIT = 20  # seconds for the operator to react


@pytest.fixture(scope="session")
def widgets(capstan_apply: Applier) -> None:
    capstan_apply(HERE / "crd.yaml")


def widget(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "capstan.example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"data": data}}


def next_configmap(core: client.CoreV1Api, namespace: str, name: str, resource_version: str = "0",
                   want: dict[str, str] | None = None) -> client.V1ConfigMap | None:
    """The ConfigMap `name` once it exists (and holds `want`), watched from `resource_version`."""
    stream = watch.Watch()  # type: ignore[no-untyped-call]
    events = stream.stream(core.list_namespaced_config_map, namespace,  # type: ignore[no-untyped-call]
                           field_selector=f"metadata.name={name}", resource_version=resource_version,
                           timeout_seconds=WAIT)
    for event in events:
        found: client.V1ConfigMap = event["object"]
        if event["type"] in ("ADDED", "MODIFIED") and (want is None or found.data == want):
            stream.stop()  # type: ignore[no-untyped-call]
            return found
    return None


def test_each_widget_gets_its_configmap(widgets: None, capstan_apply: Applier, capstan_namespace: str,
                                        capstan_service_account: MakeServiceAccount, k8s_client: client.ApiClient,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    operator = capstan_service_account("widget-operator", ROLE["rules"], cluster_rules=CLUSTER_ROLE["rules"])
    monkeypatch.setenv("KUBECONFIG", str(operator.kubeconfig))  # whom kopf and the handlers log in as
    core = client.CoreV1Api(k8s_client)
    args = ["run", "--standalone", f"--namespace={capstan_namespace}", str(HERE / "widget_operator.py")]
    with KopfRunner(args, timeout=WAIT) as runner:
        made = capstan_apply(widget("blue", {"colour": "blue"}), capstan_namespace)[0]
        configmap = next_configmap(core, capstan_namespace, "blue")
        assert configmap is not None and configmap.metadata is not None, "no ConfigMap within the wait"
        assert configmap.data == {"colour": "blue"}
        owners = [(o.kind, o.name, o.uid) for o in configmap.metadata.owner_references or []]
        assert owners == [("Widget", "blue", made["metadata"]["uid"])]

        capstan_apply(widget("blue", {"colour": "navy"}), capstan_namespace)
        assert next_configmap(core, capstan_namespace, "blue", configmap.metadata.resource_version or "0",
                              want={"colour": "navy"}) is not None
    assert runner.exception is None
    assert runner.exit_code == 0
    assert "Handler 'configure' succeeded" in runner.output


@pytest.mark.parametrize(("verb", "resource", "allowed"), [
    ("create", "configmaps", True),
    ("list", "configmaps", False),  # get by name only: the operator never lists ConfigMaps
    ("list", "secrets", False),
    ("delete", "widgets", False),
])
def test_the_operator_account_holds_only_its_role(widgets: None, capstan_namespace: str,
                                                   capstan_service_account: MakeServiceAccount, verb: str,
                                                   resource: str, allowed: bool) -> None:
    api = capstan_service_account("widget-operator", ROLE["rules"], cluster_rules=CLUSTER_ROLE["rules"]).api_client()
    calls: dict[tuple[str, str], Callable[[], object]] = {
        ("create", "configmaps"): lambda: client.CoreV1Api(api).create_namespaced_config_map(
            capstan_namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="probe"))),
        ("list", "configmaps"): lambda: client.CoreV1Api(api).list_namespaced_config_map(capstan_namespace),
        ("list", "secrets"): lambda: client.CoreV1Api(api).list_namespaced_secret(capstan_namespace),
        ("delete", "widgets"): lambda: client.CustomObjectsApi(api).delete_namespaced_custom_object(
            "capstan.example.com", "v1", capstan_namespace, "widgets", "any"),
    }
    with api:
        if allowed:
            calls[verb, resource]()
            return
        with pytest.raises(client.ApiException) as refused:
            calls[verb, resource]()
    assert refused.value.status == 403
    account = f"system:serviceaccount:{capstan_namespace}:widget-operator"
    assert f'User "{account}" cannot {verb} resource "{resource}"' in json.loads(refused.value.body or "{}")["message"]
