"""The Widget operator: each Widget gets a ConfigMap of the same name holding its spec.data, owned by it (so
it goes when the Widget goes), and the Widget's status names it. Run it as `kopf run widget_operator.py`.

kopf logs in from the KUBECONFIG file (`login_with_kubeconfig`, or the ServiceAccount in a pod); the handlers
write ConfigMaps with the official client built from the same file, without touching its global configuration.
"""

from __future__ import annotations

import os
from typing import Any

import kopf
from kubernetes import client, config

GROUP, VERSION, PLURAL = "capstan.example.com", "v1", "widgets"


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def connect(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = True
    settings.watching.server_timeout = 10
    try:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        memo.api = client.ApiClient(configuration)
    except config.ConfigException:
        # KUBECONFIG read now: the kubernetes package reads its default once, when first imported
        memo.api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=os.environ.get("KUBECONFIG"), persist_config=False)


@kopf.on.cleanup()
def disconnect(memo: kopf.Memo, **_: Any) -> None:
    memo.api.close()


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.data")
def configure(name: str, namespace: str | None, spec: kopf.Spec, body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo,
              **_: Any) -> None:
    assert namespace is not None  # the CRD is namespaced
    configmap: dict[str, Any] = {"metadata": {"name": name}, "data": dict(spec.get("data") or {})}
    kopf.adopt(configmap, owner=body)  # an ownerReference to the Widget, and its namespace
    core = client.CoreV1Api(memo.api)
    try:
        core.create_namespaced_config_map(namespace, configmap)  # type: ignore[arg-type]
    except client.ApiException as err:
        if err.status != 409:
            raise
        core.replace_namespaced_config_map(name, namespace, configmap)  # type: ignore[arg-type]
    patch.status["configMap"] = name
