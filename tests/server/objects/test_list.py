"""List: selectors, paging that pins a snapshot, and the spec's resourceVersion x resourceVersionMatch x limit table.

The table is api-concepts.md "Semantics for get and list"; the 410 wording and the continue-token
rules are etcd3 store.GetList's (storage/etcd3/errors.go, storage/continue.go), as exercised by
kube's own integration test TestListOptions (test/integration/apiserver/apiserver_test.go).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from capstan.api.core.v1 import core_pb2 as corev1_pb2
from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, list_meta, path, refused

CM = path("configmaps", "default")
ALL_CM = path("configmaps")
SECRETS = path("secrets", "default")
NAMESPACES = path("namespaces")

LABELS: dict[str, dict[str, str]] = {
    "a": {"app": "web", "tier": "front"},
    "b": {"app": "web", "tier": "back"},
    "c": {"app": "db"},
    "d": {},
    "e": {"app": "cache", "tier": "back"},
}


async def seed(client: Client) -> None:
    for name, labels in LABELS.items():
        await client.create(CM, {"metadata": {"name": name, "labels": labels}, "data": {"v": "1"}})
    await client.create(path("configmaps", "kube-system"), {"metadata": {"name": "other", "labels": {"app": "web"}}})


def names(items: list[Obj]) -> list[str]:
    return [i["metadata"]["name"] for i in items]


async def test_a_list_answers_items_in_name_order_at_the_current_revision(client: Client) -> None:
    await seed(client)
    resp = await client.list_response(CM)
    assert (resp.kind, resp.api_version) == ("ConfigMapList", "v1")
    meta, items = await client.list(CM)
    assert meta == {"resourceVersion": str(client.revision())}
    assert names(items) == ["a", "b", "c", "d", "e"]
    for item in items:
        got = await client.get(path("configmaps", "default", item["metadata"]["name"]))
        assert item["metadata"] == got["metadata"] and item.get("data") == got.get("data")


async def test_a_list_without_namespace_spans_all_namespaces(client: Client) -> None:
    await seed(client)
    _, items = await client.list(ALL_CM)
    assert sorted((i["metadata"]["namespace"], i["metadata"]["name"]) for i in items) == [
        *(("default", n) for n in "abcde"),
        ("kube-system", "other"),
    ]


# ---------------------------------------------------------------- selectors


LABEL_SELECTORS: list[tuple[str, list[str]]] = [
    ("", ["a", "b", "c", "d", "e"]),
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d", "e"]),
    ("app in (web,db)", ["a", "b", "c"]),
    ("app notin (web)", ["c", "d", "e"]),
    ("tier", ["a", "b", "e"]),
    ("!tier", ["c", "d"]),
    ("app=web,tier=back", ["b"]),
    ("app=nothing", []),
]


@pytest.mark.parametrize(("selector", "expected"), LABEL_SELECTORS, ids=[s or "empty" for s, _ in LABEL_SELECTORS])
async def test_label_selectors(client: Client, selector: str, expected: list[str]) -> None:
    await seed(client)
    assert await client.names(CM, labelSelector=selector) == expected


FIELD_SELECTORS: list[tuple[core_pb2.ResourcePath, str, list[str]]] = [
    (CM, "metadata.name=c", ["c"]),
    (CM, "metadata.name==c", ["c"]),
    (CM, "metadata.name!=c", ["a", "b", "d", "e"]),
    (CM, "metadata.namespace=default", ["a", "b", "c", "d", "e"]),
    (CM, "metadata.namespace=kube-system", []),
    (ALL_CM, "metadata.namespace=kube-system", ["other"]),
    (ALL_CM, "metadata.name=other,metadata.namespace=kube-system", ["other"]),
    (SECRETS, "type=Opaque", ["plain"]),
    (SECRETS, "type!=Opaque", ["tls-ish"]),
    (NAMESPACES, "status.phase=Active,metadata.name=default", ["default"]),
]


@pytest.mark.parametrize(
    ("target", "selector", "expected"), FIELD_SELECTORS, ids=[f"{t.resource}:{s}" for t, s, _ in FIELD_SELECTORS]
)
async def test_field_selectors(
    client: Client, target: core_pb2.ResourcePath, selector: str, expected: list[str]
) -> None:
    await seed(client)
    await client.create(SECRETS, {"metadata": {"name": "plain"}})
    await client.create(SECRETS, {"metadata": {"name": "tls-ish"}, "type": "example.com/tls"})
    assert await client.names(target, fieldSelector=selector) == expected


async def test_label_and_field_selectors_together(client: Client) -> None:
    await seed(client)
    assert await client.names(CM, labelSelector="app=web", fieldSelector="metadata.name!=a") == ["b"]


UNSUPPORTED_FIELDS: list[tuple[core_pb2.ResourcePath, str, str]] = [
    # ConfigMap registers no field label conversion: runtime.DefaultMetaV1FieldSelectorConversion.
    (CM, "data.v=1", '"data.v" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    # Secret and Namespace register one (AddFieldLabelConversionsForSecret/ForNamespace).
    (SECRETS, "spec.x=1", "field label not supported: spec.x"),
    (NAMESPACES, "metadata.namespace=default", "field label not supported: metadata.namespace"),
]


@pytest.mark.parametrize(
    ("target", "selector", "message"), UNSUPPORTED_FIELDS, ids=[t.resource for t, _, _ in UNSUPPORTED_FIELDS]
)
async def test_an_unsupported_field_selector_is_a_bad_request(
    client: Client, target: core_pb2.ResourcePath, selector: str, message: str
) -> None:
    # The list handler: fieldSelector.Transform(ConvertFieldLabel) failing -> errors.NewBadRequest(err.Error()).
    failed = await refused(client.list(target, fieldSelector=selector))
    assert failed.status == kube.bad_request(message)


# ---------------------------------------------------------------- limit and continue


async def test_pages_are_served_from_the_first_pages_snapshot_while_writes_happen(client: Client) -> None:
    await seed(client)
    first_meta, first = await client.list(CM, limit=2)
    snapshot = first_meta["resourceVersion"]
    assert snapshot == str(client.revision())
    assert names(first) == ["a", "b"]
    assert first_meta["remainingItemCount"] == 3 and first_meta["continue"]

    await client.create(CM, {"metadata": {"name": "bb"}})  # sorts into the unread part
    await client.update(path("configmaps", "default", "c"), {"metadata": {"name": "c"}, "data": {"v": "2"}})
    await client.delete(path("configmaps", "default", "d"))
    await client.create(CM, {"metadata": {"name": "f"}})

    second_meta, second = await client.list(CM, limit=2, **{"continue": first_meta["continue"]})
    assert names(second) == ["c", "d"]
    assert second[0]["data"] == {"v": "1"}  # c as it was at the snapshot
    assert (second_meta["resourceVersion"], second_meta["remainingItemCount"]) == (snapshot, 1)

    last_meta, last = await client.list(CM, limit=2, **{"continue": second_meta["continue"]})
    assert names(last) == ["e"]
    assert last_meta == {"resourceVersion": snapshot}  # no continue, no remainingItemCount on the last page

    fresh_meta, fresh = await client.list(CM)
    assert names(fresh) == ["a", "b", "bb", "c", "e", "f"]
    assert int(fresh_meta["resourceVersion"]) > int(snapshot)


@pytest.mark.parametrize("limit", [5, 6, 500])
async def test_a_limit_that_covers_the_collection_has_no_continue(client: Client, limit: int) -> None:
    await seed(client)
    meta, items = await client.list(CM, limit=limit)
    assert meta == {"resourceVersion": str(client.revision())}
    assert len(items) == 5


@pytest.mark.parametrize(
    "selection",
    [
        {"labelSelector": "app"},
        {"fieldSelector": "metadata.name!=zzz"},
        {"labelSelector": "app", "fieldSelector": "metadata.name!=a"},
    ],
    ids=["label", "field", "both"],
)
async def test_remaining_item_count_is_only_given_without_selectors(client: Client, selection: Obj) -> None:
    await seed(client)
    meta, items = await client.list(CM, limit=1, **selection)
    assert len(items) == 1 and meta["continue"]
    assert "remainingItemCount" not in meta


@pytest.mark.parametrize(("limit", "max_response_bytes"), [(2, 0), (0, 4096 + 700), (4, 4096 + 700)],
                         ids=["limit", "max_response_bytes", "both"])
async def test_pages_read_to_assemble_a_whole_list_leave_the_remaining_items_uncounted(
        client: Client, limit: int, max_response_bytes: int) -> None:
    """omit_remaining_item_count: the same pages and continue tokens, without remainingItemCount."""
    await seed(client)
    pages: dict[bool, list[tuple[Obj, list[str]]]] = {}
    for omit in (False, True):
        token, pages[omit] = "", []
        while True:
            options = meta_pb2.ListOptions(limit=limit)
            setattr(options, "continue", token)
            listed: core_pb2.ListResponse = await client.call(client.stub.List, core_pb2.ListRequest(
                path=CM, options=options, max_response_bytes=max_response_bytes, omit_remaining_item_count=omit))
            meta = list_meta(listed.metadata)
            pages[omit].append((meta, names([orjson.loads(item) for item in listed.items])))
            token = meta.get("continue", "")
            if not token:
                break
    assert len(pages[False]) > 1 and pages[False][0][0]["remainingItemCount"] > 0
    assert pages[True] == [({k: v for k, v in meta.items() if k != "remainingItemCount"}, items)
                           for meta, items in pages[False]]


@pytest.mark.parametrize(("change", "accept"), [
    ("update", core_pb2.ENCODING_JSON), ("update", core_pb2.ENCODING_PROTOBUF), ("delete", core_pb2.ENCODING_JSON),
    ("forget", core_pb2.ENCODING_JSON), ("forget", core_pb2.ENCODING_PROTOBUF)])
async def test_a_list_read_again_answers_what_is_stored_whatever_its_renderings_hold(
        client: Client, change: str, accept: core_pb2.Encoding) -> None:
    """A page whose items are all rendered is answered from the renderings; a write, or renderings forgotten,
    and it is read again with its values: every answer is the store's state at its revision."""
    await seed(client)

    async def listed(limit: int = 500) -> list[bytes]:  # a page of every object: no max_response_bytes cut
        answer: core_pb2.ListResponse = await client.call(client.stub.List, core_pb2.ListRequest(
            path=CM, options=meta_pb2.ListOptions(limit=limit), accept=accept))
        return list(answer.items)

    first = await listed()
    assert await listed() == first and await listed(limit=2) == first[:2]
    if change == "update":
        await client.update(path("configmaps", "default", "b"), {"metadata": {"name": "b"}, "data": {"v": "2"}})
    elif change == "delete":
        await client.delete(path("configmaps", "default", "b"))
    else:
        client.running.core.context.renderings.clear()
    again = await listed()
    expected = {"update": 5, "delete": 4, "forget": 5}[change]
    assert len(again) == expected and (again == first) is (change == "forget")
    if change == "update" and accept == core_pb2.ENCODING_JSON:
        assert orjson.loads(again[1])["data"] == {"v": "2"}
    assert await listed() == again


@pytest.mark.parametrize(("accept", "selector", "joined"), [
    (core_pb2.ENCODING_JSON, "", True), (core_pb2.ENCODING_PROTOBUF, "", True),
    (core_pb2.ENCODING_JSON, "app=nothing", True),  # an empty page: no element
    (core_pb2.ENCODING_JSON_TEXT, "", False)])
async def test_items_joined_as_the_answer_carries_them(
        client: Client, accept: core_pb2.Encoding, selector: str, joined: bool) -> None:
    """join_items: one element, JSON items joined by commas or protobuf items framed as the list's field 2."""
    await seed(client)
    answers = []
    for join in (False, True):
        request = core_pb2.ListRequest(path=CM, options=meta_pb2.ListOptions(limit=3, labelSelector=selector),
                                       accept=accept, join_items=join)
        answers.append(await client.call(client.stub.List, request))
    apart, together = answers
    assert together.items_joined is joined and list_meta(together.metadata) == list_meta(apart.metadata)
    assert list(together.json_items) == list(apart.json_items)
    if not joined:
        assert list(together.items) == list(apart.items)
    elif not apart.items:
        assert list(together.items) == []
    elif accept == core_pb2.ENCODING_JSON:
        assert list(together.items) == [b",".join(apart.items)]
    else:  # the items field of a ConfigMapList: the same messages, in order
        assert len(together.items) == 1
        parsed = corev1_pb2.ConfigMapList.FromString(together.items[0]).items
        assert [item.SerializeToString(deterministic=True) for item in parsed] == list(apart.items)


async def test_paging_with_a_selector_walks_every_match(client: Client) -> None:
    await seed(client)
    seen: list[str] = []
    token = ""
    versions = set()
    for _ in range(10):
        meta, items = await client.list(CM, limit=1, labelSelector="tier", **{"continue": token})
        seen += names(items)
        versions.add(meta["resourceVersion"])
        token = meta.get("continue", "")
        if not token:
            break
    assert seen == ["a", "b", "e"]
    assert len(versions) == 1


async def test_an_expired_continue_token_is_410_with_a_token_that_continues(client: Client) -> None:
    # etcd3 handleCompactedErrorForPaging: NewResourceExpired(inconsistentContinue) with ListMeta.Continue set to
    # a token that continues after the same key at the latest revision.
    await seed(client)
    first_meta, first = await client.list(CM, limit=2)
    assert names(first) == ["a", "b"]
    await client.create(CM, {"metadata": {"name": "f"}})
    await client.running.core.context.store.compact(client.revision())
    failed = await refused(client.list(CM, limit=2, **{"continue": first_meta["continue"]}))
    fresh_token = failed.status.get("metadata", {}).pop("continue", "")
    assert fresh_token
    assert failed.status == kube.expired(kube.EXPIRED_CONTINUE)
    meta, rest = await client.list(CM, limit=10, **{"continue": fresh_token})
    assert names(rest) == ["c", "d", "e", "f"]
    assert int(meta["resourceVersion"]) >= client.revision()


def token(**fields: Any) -> str:
    return token_of(orjson.dumps(fields))


def token_of(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


BAD_TOKENS: list[tuple[str, str, str]] = [
    # storage.DecodeContinue's errors, wrapped by the list path as BadRequest("invalid continue token: %v").
    (
        "version",
        token(v="meta.k8s.io/v2", rv=5, start="a"),
        "continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2",
    ),
    (
        "zero rv",
        token(v="meta.k8s.io/v1", rv=0, start="a"),
        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    ),
    (
        "empty start",
        token(v="meta.k8s.io/v1", rv=5, start=""),
        "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
    ),
    ("traversal", token(v="meta.k8s.io/v1", rv=5, start="../x"), "continue key is not valid: ../x"),
    # Go's base64.RawURLEncoding and encoding/json (Go 1.21's scanner) on what they refuse
    ("not JSON", "garbage", "continue key is not valid: invalid character '\\u0081' looking for beginning of value"),
    ("a lone last character", "abcde", "continue key is not valid: illegal base64 data at input byte 4"),
    ("padding", "ab=c", "continue key is not valid: illegal base64 data at input byte 2"),
    ("outside the alphabet", "a@bc", "continue key is not valid: illegal base64 data at input byte 1"),
    ("truncated JSON", token(v="meta.k8s.io/v1")[:-4], "continue key is not valid: unexpected end of JSON input"),
    ("rv a string", token(v="meta.k8s.io/v1", rv="x", start="x"),
     "continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64"),
    ("start a number", token(v="meta.k8s.io/v1", rv=1, start=1),
     "continue key is not valid: json: cannot unmarshal number into Go struct field continueToken.start of type "
     "string"),
    ("an array", token_of(b"[1]"),
     "continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken"),
]


@pytest.mark.parametrize("rv", ["", "7"])
@pytest.mark.parametrize(("bad", "detail"), [b[1:] for b in BAD_TOKENS], ids=[b[0] for b in BAD_TOKENS])
async def test_an_invalid_continue_token_is_a_bad_request(client: Client, bad: str, detail: str, rv: str) -> None:
    # etcd3's GetList decodes the token before it refuses a resourceVersion beside it
    await seed(client)
    failed = await refused(client.list(CM, limit=2, resourceVersion=rv, **{"continue": bad}))
    assert failed.status == kube.bad_request(f"invalid continue token: {detail}")


# ---------------------------------------------------------------- resourceVersion x resourceVersionMatch x limit


class History:
    """a created at revision A, b after it, then a write elsewhere: `current` is newer than both."""

    def __init__(self, a: int, b: int, current: int) -> None:
        self.a, self.b, self.current = a, b, current

    def rv(self, symbol: str) -> str:
        return {"A": str(self.a), "future": str(self.current + 100)}.get(symbol, symbol)


async def history(client: Client) -> History:
    a = await client.create(CM, {"metadata": {"name": "a"}})
    b = await client.create(CM, {"metadata": {"name": "b"}})
    await client.create(path("configmaps", "kube-system"), {"metadata": {"name": "elsewhere"}})
    return History(int(a["metadata"]["resourceVersion"]), int(b["metadata"]["resourceVersion"]), client.revision())


LATEST = ("latest", ["a", "b"])
EXACT_A = ("A", ["a"])
# rv, match, limit -> (list resourceVersion, names)
TABLE: list[tuple[str, str, int, tuple[str, list[str]]]] = [
    ("", "", 0, LATEST),  # Most Recent
    ("0", "", 0, LATEST),  # Any
    ("A", "", 0, LATEST),  # Not older than
    ("", "", 10, LATEST),  # Most Recent
    ("0", "", 10, LATEST),  # Any
    ("A", "", 10, EXACT_A),  # Exact (legacy: limit without resourceVersionMatch)
    ("A", "Exact", 0, EXACT_A),
    ("A", "Exact", 10, EXACT_A),
    ("0", "NotOlderThan", 0, LATEST),  # Any
    ("A", "NotOlderThan", 0, LATEST),
    ("0", "NotOlderThan", 10, LATEST),
    ("A", "NotOlderThan", 10, LATEST),
]


@pytest.mark.parametrize(
    ("rv", "match", "limit", "expected"),
    TABLE,
    ids=[f"rv={r or 'unset'}-match={m or 'unset'}-limit={n}" for r, m, n, _ in TABLE],
)
async def test_the_resource_version_match_table(
    client: Client, rv: str, match: str, limit: int, expected: tuple[str, list[str]]
) -> None:
    h = await history(client)
    meta, items = await client.list(CM, resourceVersion=h.rv(rv), resourceVersionMatch=match, limit=limit)
    version, expected_names = expected
    assert names(items) == expected_names
    assert meta["resourceVersion"] == (str(h.current) if version == "latest" else str(h.a))


RV_MATCH_FORBIDDEN_WITHOUT_RV = kube.field_forbidden(
    "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
)
RV_MATCH_FORBIDDEN_WITH_CONTINUE = kube.field_forbidden(
    "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
)
INVALID_TABLE: list[tuple[str, str, str, int, bool, Obj]] = [
    # id, rv, match, limit, continue, Status (apimachinery ValidateListOptions, then storage's list checks)
    ("exact-unset", "", "Exact", 0, False, kube.invalid_options("ListOptions", [RV_MATCH_FORBIDDEN_WITHOUT_RV])),
    ("exact-unset-limit", "", "Exact", 10, False, kube.invalid_options("ListOptions", [RV_MATCH_FORBIDDEN_WITHOUT_RV])),
    (
        "notolder-unset",
        "",
        "NotOlderThan",
        0,
        False,
        kube.invalid_options("ListOptions", [RV_MATCH_FORBIDDEN_WITHOUT_RV]),
    ),
    (
        "exact-0",
        "0",
        "Exact",
        10,
        False,
        kube.invalid_options(
            "ListOptions",
            [
                kube.field_forbidden(
                    "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
                )
            ],
        ),
    ),
    (
        "bogus-match",
        "A",
        "Bogus",
        0,
        False,
        kube.invalid_options(
            "ListOptions", [kube.field_not_supported("resourceVersionMatch", '"Bogus"', ["Exact", "NotOlderThan", ""])]
        ),
    ),
    (
        "continue-with-match",
        "A",
        "NotOlderThan",
        10,
        True,
        kube.invalid_options("ListOptions", [RV_MATCH_FORBIDDEN_WITH_CONTINUE]),
    ),
    (
        "continue-with-match-no-rv",
        "",
        "Exact",
        10,
        True,
        kube.invalid_options("ListOptions", [RV_MATCH_FORBIDDEN_WITHOUT_RV, RV_MATCH_FORBIDDEN_WITH_CONTINUE]),
    ),
    (
        "continue-with-rv",
        "A",
        "",
        10,
        True,
        kube.bad_request("specifying resource version is not allowed when using continue"),
    ),
]


@pytest.mark.parametrize(
    ("rv", "match", "limit", "with_continue", "expected"),
    [r[1:] for r in INVALID_TABLE],
    ids=[r[0] for r in INVALID_TABLE],
)
async def test_the_invalid_cells_of_the_table(
    client: Client, rv: str, match: str, limit: int, with_continue: bool, expected: Obj
) -> None:
    h = await history(client)
    options: Obj = {"resourceVersion": h.rv(rv), "resourceVersionMatch": match, "limit": limit}
    if with_continue:
        first, _ = await client.list(CM, limit=1)
        options["continue"] = first["continue"]
    failed = await refused(client.list(CM, **options))
    assert failed.status == expected


@pytest.mark.parametrize("rv", ["", "0"])
async def test_continue_with_no_or_zero_resource_version_continues_the_snapshot(client: Client, rv: str) -> None:
    # "Invalid, treated as Continue Token, Exact" for rv=0: the token's revision is used.
    h = await history(client)
    first, items = await client.list(CM, limit=1)
    assert names(items) == ["a"]
    await client.delete(path("configmaps", "default", "b"))
    meta, rest = await client.list(CM, limit=1, resourceVersion=rv, **{"continue": first["continue"]})
    assert names(rest) == ["b"]
    assert meta["resourceVersion"] == first["resourceVersion"] == str(h.current)


@pytest.mark.parametrize(("match", "limit"), [("", 0), ("NotOlderThan", 0), ("NotOlderThan", 10)])
async def test_a_resource_version_in_the_future_times_out(client: Client, match: str, limit: int) -> None:
    h = await history(client)
    failed = await refused(client.list(CM, resourceVersion=h.rv("future"), resourceVersionMatch=match, limit=limit))
    assert failed.status == kube.too_large_resource_version(h.current + 100, h.current)


COMPACTED_TABLE: list[tuple[str, int, tuple[str, list[str]] | None]] = [
    # match, limit -> served (version, names) or None for 410 "The resourceVersion for the provided list is too old."
    ("Exact", 0, None),
    ("Exact", 10, None),
    ("", 10, None),  # legacy exact
    ("", 0, LATEST),  # not older than
    ("NotOlderThan", 0, LATEST),
    ("NotOlderThan", 10, LATEST),
]


@pytest.mark.parametrize(
    ("match", "limit", "expected"),
    COMPACTED_TABLE,
    ids=[f"match={m or 'unset'}-limit={n}" for m, n, _ in COMPACTED_TABLE],
)
async def test_a_compacted_resource_version(
    client: Client, match: str, limit: int, expected: tuple[str, list[str]] | None
) -> None:
    h = await history(client)
    await client.running.core.context.store.compact(h.current)
    options: Obj = {"resourceVersion": h.rv("A"), "resourceVersionMatch": match, "limit": limit}
    if expected is None:
        failed = await refused(client.list(CM, **options))
        assert failed.status == kube.expired(kube.EXPIRED_LIST)
    else:
        meta, items = await client.list(CM, **options)
        assert (meta["resourceVersion"], names(items)) == (str(h.current), expected[1])
