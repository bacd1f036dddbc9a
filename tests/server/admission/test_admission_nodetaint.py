"""TaintNodesByCondition, on by default as in kube: a new Node gets the not-ready NoSchedule taint unless it has
one; later writes, the status subresource and a server with the plugin disabled leave the taints alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.server.client import Obj, path

NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
DEDICATED = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def node(*taints: Obj, name: str = "n") -> Obj:
    spec: Obj = {"taints": list(taints)} if taints else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": "a"}}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


@pytest.mark.parametrize(("disabled", "given", "want"), [
    ((), [], [NOT_READY]),
    ((), [DEDICATED], [DEDICATED, NOT_READY]),  # appended after the node's own
    ((), [{**NOT_READY, "value": "x"}], [{**NOT_READY, "value": "x"}]),  # key and effect match: left as given
    ((), [{**NOT_READY, "effect": "NoExecute"}], [{**NOT_READY, "effect": "NoExecute"}, NOT_READY]),
    (("TaintNodesByCondition",), [], None),
    (("TaintNodesByCondition",), [DEDICATED], [DEDICATED]),
], ids=["none", "another", "same-key-and-effect", "other-effect", "disabled", "disabled-another"])
@pytest.mark.parametrize("dry_run", [False, True], ids=["stored", "dry-run"])
async def test_a_new_node_is_tainted_not_ready(with_plugins: Callable[..., Any], disabled: tuple[str, ...],
                                               given: list[Obj], want: list[Obj] | None, dry_run: bool) -> None:
    client = await with_plugins(disable=disabled)
    options: Obj = {"fieldManager": "maker", **({"dryRun": ["All"]} if dry_run else {})}
    created = await client.create(path("nodes"), node(*given), **options)
    assert created["spec"].get("taints") == want
    if not dry_run:
        assert (await client.get(path("nodes", name="n")))["spec"].get("taints") == want
    # admission runs after the field manager: what it adds is nobody's field
    fields = created["metadata"]["managedFields"][0]["fieldsV1"]
    taints = fields.get("f:spec", {}).get("f:taints")
    assert (taints is not None) == bool(given)


@pytest.mark.parametrize("subresource", ["", "status"])
async def test_only_a_create_is_tainted(with_plugins: Callable[..., Any], subresource: str) -> None:
    client = await with_plugins()
    created = await client.create(path("nodes"), node())
    created["spec"]["taints"] = []
    created["metadata"]["labels"] = {"touched": "yes"}
    updated, _ = await client.update(path("nodes", name="n", subresource=subresource), created)
    stored = await client.get(path("nodes", name="n"))
    if subresource:  # the status subresource keeps the stored spec
        assert stored["spec"]["taints"] == [NOT_READY]
    else:
        assert stored["spec"].get("taints") is None and updated["spec"].get("taints") is None
