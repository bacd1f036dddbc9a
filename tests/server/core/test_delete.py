"""Delete: the Success Status, preconditions, finalizers and deletionTimestamp, dry run and bad options."""

from __future__ import annotations

import pytest

from tests.server.core import kube
from tests.server.core.client import Client, Obj, path, refused

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")
HOLD = "example.com/hold"
ALSO = "example.com/also"


async def create_a(client: Client, *finalizers: str) -> Obj:
    metadata: Obj = {"name": "a"}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return await client.create(CM, {"metadata": metadata, "data": {"k": "v"}})


def named(obj: Obj, name: str) -> bool:
    return bool(obj["metadata"]["name"] == name)


# ---------------------------------------------------------------- completed deletes


async def test_a_completed_delete_answers_the_success_status(client: Client) -> None:
    # Store.finalizeDelete: Status{Success, Details{name, group, kind: <resource>, uid}}.
    created = await create_a(client)
    before = client.revision()
    answer = await client.delete(A)
    assert answer == {
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert client.revision() == before + 1
    failed = await refused(client.get(A))
    assert failed.status == kube.not_found("configmaps", "a")


async def test_a_delete_is_one_deleted_event_carrying_the_last_state(client: Client) -> None:
    created = await create_a(client)
    await client.delete(A)
    events = await client.events(CM, lambda e: True, resourceVersion=created["metadata"]["resourceVersion"])
    assert [t for t, _ in events] == ["DELETED"]
    assert events[0][1]["data"] == {"k": "v"} and events[0][1]["metadata"]["uid"] == created["metadata"]["uid"]


async def test_deleting_a_missing_object_is_not_found(client: Client) -> None:
    failed = await refused(client.delete(A))
    assert failed.status == kube.not_found("configmaps", "a")


async def test_a_background_propagation_policy_deletes_at_once(client: Client) -> None:
    await create_a(client)
    answer = await client.delete(A, propagationPolicy="Background")
    assert answer["status"] == "Success"
    await refused(client.get(A))


# ---------------------------------------------------------------- preconditions


async def test_matching_preconditions_delete(client: Client) -> None:
    created = await create_a(client)
    m = created["metadata"]
    answer = await client.delete(A, preconditions={"uid": m["uid"], "resourceVersion": m["resourceVersion"]})
    assert answer["status"] == "Success"


async def test_a_uid_precondition_that_does_not_match_is_a_conflict(client: Client) -> None:
    # rest.BeforeDelete checks preconditions first: NewConflict(GroupResource{Resource: gvk.Kind}, ...), so the
    # kind, not the resource, names the object (seen from kube-apiserver: `Operation cannot be fulfilled on Pod
    # "web-...": the UID in the precondition (...) does not match the UID in record (...). The object might have
    # been deleted and then recreated`).
    created = await create_a(client)
    other = "00000000-0000-4000-8000-000000000000"
    before = client.revision()
    failed = await refused(client.delete(A, preconditions={"uid": other}))
    detail = (
        f"the UID in the precondition ({other}) does not match the UID in record ({created['metadata']['uid']}). "
        "The object might have been deleted and then recreated"
    )
    assert failed.status == kube.conflict("ConfigMap", "a", detail)
    assert client.revision() == before
    assert await client.get(A) == created


async def test_a_resource_version_precondition_that_does_not_match_is_a_conflict(client: Client) -> None:
    created = await create_a(client)
    updated, _ = await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "w"}})
    stale = created["metadata"]["resourceVersion"]
    failed = await refused(client.delete(A, preconditions={"resourceVersion": stale}))
    detail = (
        f"the ResourceVersion in the precondition ({stale}) does not match the ResourceVersion in record "
        f"({updated['metadata']['resourceVersion']}). The object might have been modified"
    )
    assert failed.status == kube.conflict("ConfigMap", "a", detail)
    assert await client.get(A) == updated


# ---------------------------------------------------------------- finalizers


async def test_an_object_with_finalizers_is_marked_and_returned(client: Client) -> None:
    created = await create_a(client, HOLD)
    answer = await client.delete(A)
    m = answer["metadata"]
    assert m["deletionGracePeriodSeconds"] == 0
    assert m["deletionTimestamp"] >= created["metadata"]["creationTimestamp"]
    assert m["finalizers"] == [HOLD]
    assert m["resourceVersion"] == str(client.revision())
    assert await client.get(A) == answer
    events = await client.events(CM, lambda e: True, resourceVersion=created["metadata"]["resourceVersion"])
    assert events == [("MODIFIED", answer)]


async def test_deleting_an_object_already_being_deleted_changes_nothing(client: Client) -> None:
    await create_a(client, HOLD)
    marked = await client.delete(A)
    before = client.revision()
    again = await client.delete(A)
    assert again == marked
    assert client.revision() == before


async def test_removing_the_last_finalizer_deletes_the_object(client: Client) -> None:
    created = await create_a(client, HOLD, ALSO)
    marked = await client.delete(A)
    one_left = dict(marked, metadata={**marked["metadata"], "finalizers": [ALSO]})
    still, _ = await client.update(A, one_left)
    assert still["metadata"]["finalizers"] == [ALSO]
    assert still["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    assert await client.get(A) == still
    none_left = dict(still, metadata={k: v for k, v in still["metadata"].items() if k != "finalizers"})
    await client.update(A, none_left)
    failed = await refused(client.get(A))
    assert failed.status == kube.not_found("configmaps", "a")
    events = await client.events(
        CM, lambda e: e[0] == "DELETED", resourceVersion=created["metadata"]["resourceVersion"]
    )
    assert [t for t, _ in events] == ["MODIFIED", "MODIFIED", "DELETED"]


async def test_a_deletion_timestamp_can_never_be_unset(client: Client) -> None:
    await create_a(client, HOLD)
    marked = await client.delete(A)
    body = dict(marked, metadata={k: v for k, v in marked["metadata"].items() if not k.startswith("deletion")})
    body["data"] = {"k": "changed"}
    updated, _ = await client.update(A, body)
    assert updated["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    assert updated["metadata"]["deletionGracePeriodSeconds"] == 0
    assert updated["data"] == {"k": "changed"}


async def test_no_finalizer_can_be_added_to_an_object_being_deleted(client: Client) -> None:
    # ValidateObjectMetaUpdate -> ValidateNoNewFinalizers: field.Forbidden with %#v of the new ones.
    await create_a(client, HOLD)
    marked = await client.delete(A)
    body = dict(marked, metadata={**marked["metadata"], "finalizers": [HOLD, ALSO]})
    before = client.revision()
    failed = await refused(client.update(A, body))
    assert failed.status == kube.invalid(
        "ConfigMap",
        "a",
        [
            kube.field_forbidden(
                "metadata.finalizers",
                'no new finalizers can be added if the object is being deleted, found new finalizers []string{"'
                + ALSO
                + '"}',
            )
        ],
    )
    assert client.revision() == before


async def test_finalizers_may_be_added_before_deletion(client: Client) -> None:
    created = await create_a(client)
    body = dict(created, metadata={**created["metadata"], "finalizers": [HOLD]})
    updated, _ = await client.update(A, body)
    assert updated["metadata"]["finalizers"] == [HOLD]


# ---------------------------------------------------------------- dry run and options


async def test_dry_run_delete_answers_success_and_deletes_nothing(client: Client) -> None:
    created = await create_a(client)
    before = client.revision()
    answer = await client.delete(A, dryRun=["All"])
    assert answer == {
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert client.revision() == before
    assert await client.get(A) == created


async def test_dry_run_delete_of_a_held_object_answers_it_marked_and_stores_nothing(client: Client) -> None:
    created = await create_a(client, HOLD)
    before = client.revision()
    answer = await client.delete(A, dryRun=["All"])
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0 and "deletionTimestamp" in answer["metadata"]
    assert client.revision() == before
    assert await client.get(A) == created


async def test_dry_run_delete_still_checks_preconditions(client: Client) -> None:
    created = await create_a(client)
    other = "00000000-0000-4000-8000-000000000000"
    failed = await refused(client.delete(A, dryRun=["All"], preconditions={"uid": other}))
    assert failed.status["code"] == 409
    assert await client.get(A) == created


@pytest.mark.parametrize(
    ("options", "causes"),
    [
        # ValidateDeleteOptions: propagationPolicy NotSupported lists Foreground, Background, Orphan and "nil".
        (
            {"propagationPolicy": "Bogus"},
            [kube.field_not_supported("propagationPolicy", '"Bogus"', ["Foreground", "Background", "Orphan", "nil"])],
        ),
        ({"dryRun": ["Bogus"]}, [kube.field_not_supported("dryRun", '["Bogus"]', ["All"])]),
    ],
    ids=["propagationPolicy", "dryRun"],
)
async def test_invalid_delete_options_are_invalid(client: Client, options: Obj, causes: list[Obj]) -> None:
    created = await create_a(client)
    before = client.revision()
    failed = await refused(client.delete(A, **options))
    assert failed.status == kube.invalid_options("DeleteOptions", causes)
    assert client.revision() == before
    assert await client.get(A) == created
