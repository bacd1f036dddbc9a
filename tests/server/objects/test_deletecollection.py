"""DeleteCollection: delete what a list selects and answer the list of it (Store.DeleteCollection)."""

from __future__ import annotations

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

CM = path("configmaps", "default")
HOLD = "example.com/hold"


async def seed(client: Client) -> None:
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        await client.create(CM, {"metadata": {"name": name, "labels": {"tier": tier}}})
    await client.create(path("configmaps", "kube-system"), {"metadata": {"name": "a", "labels": {"tier": "web"}}})


def names(deleted: core_pb2.ListResponse) -> list[str]:
    return [orjson.loads(item)["metadata"]["name"] for item in deleted.items]


SELECTIONS: list[tuple[str, Obj, list[str]]] = [
    ("everything", {}, ["a", "b", "c"]),
    ("label equality", {"labelSelector": "tier=web"}, ["a", "b"]),
    ("label set", {"labelSelector": "tier in (db)"}, ["c"]),
    ("label inequality", {"labelSelector": "tier!=web"}, ["c"]),
    ("field name", {"fieldSelector": "metadata.name=b"}, ["b"]),
    ("field name not", {"fieldSelector": "metadata.name!=b"}, ["a", "c"]),
    ("both", {"labelSelector": "tier=web", "fieldSelector": "metadata.name!=a"}, ["b"]),
    ("nothing", {"labelSelector": "tier=none"}, []),
]


@pytest.mark.parametrize(("selection", "expected"), [s[1:] for s in SELECTIONS], ids=[s[0] for s in SELECTIONS])
async def test_deletecollection_deletes_what_the_selectors_select_and_lists_it(
    client: Client, selection: Obj, expected: list[str]
) -> None:
    await seed(client)
    deleted = await client.delete_collection(CM, list_options=selection)
    assert (deleted.kind, deleted.api_version) == ("ConfigMapList", "v1")
    assert names(deleted) == expected
    assert await client.names(CM) == [n for n in ("a", "b", "c") if n not in expected]
    assert await client.names(path("configmaps", "kube-system")) == ["a"]


async def test_deletecollection_across_namespaces_deletes_in_all_of_them(client: Client) -> None:
    await seed(client)
    deleted = await client.delete_collection(path("configmaps"), list_options={"labelSelector": "tier=web"})
    assert sorted(names(deleted)) == ["a", "a", "b"]
    assert await client.names(path("configmaps")) == ["c"]


async def test_deletecollection_marks_objects_held_by_finalizers(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "held", "finalizers": [HOLD]}})
    await client.create(CM, {"metadata": {"name": "free"}})
    deleted = await client.delete_collection(CM)
    assert sorted(names(deleted)) == ["free", "held"]
    _, items = await client.list(CM)
    assert [i["metadata"]["name"] for i in items] == ["held"]
    assert items[0]["metadata"]["deletionGracePeriodSeconds"] == 0 and "deletionTimestamp" in items[0]["metadata"]


async def test_dry_run_deletecollection_deletes_nothing(client: Client) -> None:
    await seed(client)
    before = client.revision()
    deleted = await client.delete_collection(CM, {"labelSelector": "tier=web"}, {"dryRun": ["All"]})
    assert names(deleted) == ["a", "b"]
    assert client.revision() == before
    assert await client.names(CM) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("list_options", "delete_options", "expected"),
    [
        (
            {"fieldSelector": "data.k=v"},
            {},
            # No field label conversion is registered for ConfigMap: runtime.DefaultMetaV1FieldSelectorConversion.
            kube.bad_request('"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ),
        (
            {},
            {"dryRun": ["Bogus"]},
            kube.invalid_options("DeleteOptions", [kube.field_not_supported("dryRun", '[]string{"Bogus"}', ["All"])]),
        ),
        (
            {"resourceVersionMatch": "Exact"},
            {},
            kube.invalid_options(
                "ListOptions",
                [
                    kube.field_forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
                    )
                ],
            ),
        ),
    ],
    ids=["unsupported field", "dryRun", "list options"],
)
async def test_deletecollection_refuses_bad_options_and_deletes_nothing(
    client: Client, list_options: Obj, delete_options: Obj, expected: Obj
) -> None:
    await seed(client)
    before = client.revision()
    failed = await refused(client.delete_collection(CM, list_options, delete_options))
    assert failed.status == expected
    assert client.revision() == before
