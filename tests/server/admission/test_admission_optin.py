"""kube's admission plugins that are off by default and run when --enable-admission-plugins names them:
AlwaysPullImages, DenyServiceExternalIPs and AlwaysDeny, with kube's answers; off, they change nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.admission import optin
from server.kinds import BUILTIN
from server.machinery.errors import ApiError
from server.objects.admitting import Attributes
from server.objects.core import Core
from tests.server.client import Obj, path, refused

NS = "default"
SERVICES = next(r for r in BUILTIN if (r.group, r.resource) == ("", "services"))


def pod(name: str = "p", **container: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"initContainers": [{"name": "init", "image": "busybox:1.36", "imagePullPolicy": "Never"}],
                     "containers": [{"name": "app", "image": "nginx:1.27", **container}]}}


def service(*ips: str) -> Obj:
    spec: Obj = {"ports": [{"port": 80}]}
    if ips:
        spec["externalIPs"] = list(ips)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}


@pytest.mark.parametrize(("enabled", "container", "policies"), [
    (("AlwaysPullImages",), {"imagePullPolicy": "IfNotPresent"}, ["Always", "Always"]),
    (("AlwaysPullImages",), {}, ["Always", "Always"]),
    ((), {"imagePullPolicy": "IfNotPresent"}, ["Never", "IfNotPresent"]),  # off: the Pod's own
])
async def test_always_pull_images_sets_every_containers_policy(with_plugins: Callable[..., Any],
                                                               enabled: tuple[str, ...], container: Obj,
                                                               policies: list[str]) -> None:
    client = await with_plugins(*enabled)
    created = await client.create(path("pods", NS), pod(**container))
    spec = created["spec"]
    assert [c["imagePullPolicy"] for c in (*spec["initContainers"], *spec["containers"])] == policies


async def test_always_pull_images_judges_an_update_only_with_a_new_image(with_plugins: Callable[..., Any]) -> None:
    client = await with_plugins("AlwaysPullImages")
    created = await client.create(path("pods", NS), pod())
    created["spec"]["activeDeadlineSeconds"] = 30  # no new image: the policies stay as stored
    updated, _ = await client.update(path("pods", NS, "p"), created)
    assert updated["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    updated["spec"]["containers"][0]["image"] = "nginx:1.28"
    changed, _ = await client.update(path("pods", NS, "p"), updated)
    assert changed["spec"]["containers"][0]["imagePullPolicy"] == "Always"


DENIED = 'services "s" is forbidden: Use of external IPs is denied by admission control'


@pytest.mark.parametrize(("enabled", "ips", "message"), [
    (("DenyServiceExternalIPs",), ("10.1.0.1",), DENIED),
    (("DenyServiceExternalIPs",), (), None),  # none asked for
    ((), ("10.1.0.1",), None),  # off
])
async def test_deny_service_external_ips_refuses_a_new_service_with_them(
        with_plugins: Callable[..., Any], enabled: tuple[str, ...], ips: tuple[str, ...], message: str | None) -> None:
    client = await with_plugins(*enabled)
    call = client.create(path("services", NS), service(*ips))
    if message is None:
        await call
        return
    failed = await refused(call)
    assert (failed.status["code"], failed.status["message"]) == (403, message)


@pytest.mark.parametrize(("before", "after", "denied"), [
    ((), ("10.1.0.1",), True),
    (("10.1.0.1",), ("10.1.0.1", "10.1.0.2"), True),  # one more
    (("10.1.0.1", "10.1.0.2"), ("10.1.0.2",), False),  # dropping one
    (("10.1.0.1",), ("10.1.0.1",), False),  # keeping them
    (("10.1.0.1",), (), False),
])
async def test_an_updated_service_may_keep_or_drop_its_external_ips(core: Core, before: tuple[str, ...],
                                                                    after: tuple[str, ...], denied: bool) -> None:
    # A Service with externalIPs from before the plugin was on: its rule judged on the update's attributes.
    attrs = Attributes(resource=SERVICES, operation="UPDATE", name="s", namespace=NS, obj=service(*after),
                       old=service(*before), dry_run=False)
    if denied:
        with pytest.raises(ApiError) as raised:
            await optin.deny_external_ips(core.context, attrs)
        assert raised.value.status.message == DENIED
    else:
        await optin.deny_external_ips(core.context, attrs)


async def test_always_deny_refuses_every_write(with_plugins: Callable[..., Any]) -> None:
    client = await with_plugins("AlwaysDeny")
    failed = await refused(client.create(path("configmaps", NS), {"metadata": {"name": "c"}, "data": {}}))
    assert (failed.status["code"], failed.status["message"]) == (
        403, 'configmaps "c" is forbidden: admission control is denying all modifications')
    assert (await client.list(path("configmaps", NS)))[1] is not None  # reads are not admitted
