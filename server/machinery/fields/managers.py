"""metadata.managedFields read into owners and their field sets, and written back as Kubernetes does.

An owner is a manager name with its operation ("Apply" or "Update"), the subresource it wrote
through, and — for Update only — the apiVersion it wrote (an applier keeps one entry across
versions). Entries are written sorted as kube-apiserver sorts them: operation, time, manager,
apiVersion, subresource; `time` is when the owner last changed the object (absent when it never did).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from server.machinery.bounded import Bounded
from server.machinery.fields.fieldset import FieldSet

APPLY, UPDATE = "Apply", "Update"
FIELDS_V1 = "FieldsV1"
FIELD_MANAGER_MAX_LENGTH = 128


def manager_from_user_agent(user_agent: str) -> str:
    """The field manager of a write that names none: the User-Agent up to its first "/", printable
    characters only, at most 128 (kube-apiserver's prefixFromUserAgent). Used where a request arrives:
    the gateway for REST, the gRPC service for gRPC."""
    return "".join(c for c in user_agent.split("/", 1)[0] if c.isprintable())[:FIELD_MANAGER_MAX_LENGTH]


class Owner(NamedTuple):
    """A key of every owners map a write looks up several times: a tuple, so hashing and comparing it runs
    in C."""

    manager: str
    operation: str
    api_version: str = ""  # "" for appliers
    subresource: str = ""

    @staticmethod
    def of(manager: str, operation: str, api_version: str, subresource: str) -> Owner:
        return Owner(manager, operation, api_version if operation == UPDATE else "", subresource)

    def describe(self) -> str:
        """As conflicts name owners (apimachinery's printManager): `"kubectl" using v1` for updaters."""
        text = '"' + self.manager.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


@dataclass(frozen=True, slots=True)
class Owned:
    """entry: the managedFields entry this was read from, written back as it was while unchanged.
    fields_v1: the FieldsV1 `fields` was read from when it is the one `fields` prints, written again
    while the fields are the same."""

    fields: FieldSet
    api_version: str
    time: str | None = None
    entry: dict[str, Any] | None = field(default=None, compare=False)
    fields_v1: dict[str, Any] | None = field(default=None, compare=False)

    def retimed(self, fields: FieldSet, api_version: str, time: str | None) -> Owned:
        """These fields' owner after a change at `time`: the FieldsV1 read is kept when the fields are."""
        return Owned(fields, api_version, time, fields_v1=self.fields_v1 if fields is self.fields else None)


Managed = dict[Owner, Owned]


def decode(entries: object) -> Managed:
    """Raises ValueError for entries that are not valid managedFields."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    managed: Managed = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError("a managedFields entry must be an object")
        operation = entry.get("operation", "")
        if operation not in (APPLY, UPDATE):
            raise ValueError(f"operation must be {APPLY} or {UPDATE}")
        if entry.get("fieldsType", FIELDS_V1) != FIELDS_V1:
            raise ValueError("fieldsType must be FieldsV1")
        api_version = str(entry.get("apiVersion", ""))
        owner = Owner.of(str(entry.get("manager", "")), operation, api_version, str(entry.get("subresource", "")))
        if owner in managed:
            raise ValueError(f"duplicate managedFields entry for {owner.describe()}")
        time = entry.get("time")
        data = entry.get("fieldsV1") or {}
        fields, printed = _fields(data)
        managed[owner] = Owned(fields, api_version, time if isinstance(time, str) else None, entry,
                               data if printed else None)
    return managed


def _fields(data: object) -> tuple[FieldSet, bool]:
    """FieldsV1 read into a set, and whether the set prints as that FieldsV1 again (clients may send
    other spellings); the same few sets recur on every write of an object, so both are kept."""
    text = orjson.dumps(data)
    known = _READ.get(text)
    if known is None:
        fields = FieldSet.from_fields_v1(data)
        known = (fields, orjson.dumps(fields.to_fields_v1()) == text)
        _READ.put(text, known)
    return known


_READ: Bounded[bytes, tuple[FieldSet, bool]] = Bounded(4096)


def encode(managed: Managed) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for owner, owned in sorted(managed.items(), key=_order):
        if owned.entry is not None:
            entries.append(owned.entry)
        else:
            fields_v1 = owned.fields_v1 if owned.fields_v1 is not None else owned.fields.to_fields_v1()
            entries.append(entry(owner, owned.api_version, owned.time, fields_v1))
    return entries


def entry(owner: Owner, api_version: str, time: str | None, fields_v1: dict[str, Any]) -> dict[str, Any]:
    """One managedFields entry, its keys in ManagedFieldsEntry's order."""
    out: dict[str, Any] = {"manager": owner.manager, "operation": owner.operation, "apiVersion": api_version}
    if time is not None:
        out["time"] = time
    out["fieldsType"] = FIELDS_V1
    out["fieldsV1"] = fields_v1
    if owner.subresource:
        out["subresource"] = owner.subresource
    return out


def is_reset(entries: object) -> bool:
    """A list holding one empty entry: the client asks to clear managedFields."""
    return isinstance(entries, list) and len(entries) == 1 and entries[0] in ({}, None)


def _order(item: tuple[Owner, Owned]) -> tuple[str, str, str, str, str]:
    owner, owned = item
    # Times are RFC 3339 seconds in UTC, so they sort as text; no time sorts first, as the zero time.
    return (owner.operation, owned.time or "", owner.manager, owned.api_version, owner.subresource)
