"""Which objects a list, watch or deletecollection selects: label and field selectors together."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from server.machinery import errors
from server.machinery.selectors import fields as field_selectors
from server.machinery.selectors import labels as label_selectors
from server.machinery.values import Obj
from server.registry.resources import Resource

_KEY_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True, slots=True)
class Selection:
    resource: Resource
    labels: label_selectors.Selector | None
    fields: field_selectors.Selector | None

    @property
    def everything(self) -> bool:
        return self.labels is None and self.fields is None

    def matches(self, obj: Obj) -> bool:
        if self.labels is not None and not self.labels.matches((obj.get("metadata") or {}).get("labels") or {}):
            return False
        if self.fields is not None:
            return self.fields.matches(self.resource.field_values(obj))
        return True

    @property
    def by_key(self) -> bool:
        """Whether the storage key alone decides: no label selector, and fields of the key only (metadata.name,
        metadata.namespace), as a controller's `metadata.name=x` watch across namespaces asks."""
        return self.labels is None and self.fields is not None and all(
            r.field in _KEY_FIELDS for r in self.fields.requirements)

    def matches_key(self, key: bytes) -> bool:
        """matches() of the object stored at `key`, for a selection `by_key`, without reading the object."""
        assert self.fields is not None
        rest = key[len(self.resource.key_prefix()):].decode()
        if self.resource.namespaced:
            namespace, _, name = rest.partition("/")
            return self.fields.matches({"metadata.name": name, "metadata.namespace": namespace})
        return self.fields.matches({"metadata.name": rest})

    def attributes(self, obj: Obj) -> tuple[Mapping[str, str], Mapping[str, str]]:
        """What any selection over this resource reads of `obj`: its labels and its field values."""
        labels: Mapping[str, str] = (obj.get("metadata") or {}).get("labels") or {}
        return labels, self.resource.field_values(obj)

    def matches_attributes(self, labels: Mapping[str, str], field_values: Mapping[str, str]) -> bool:
        """matches(obj), given attributes(obj)."""
        if self.labels is not None and not self.labels.matches(labels):
            return False
        return self.fields is None or self.fields.matches(field_values)


def selection(resource: Resource, label_selector: str, field_selector: str) -> Selection:
    """Parse both selectors; 400 BadRequest with kube-apiserver's message when either is bad."""
    labels = fields = None
    if label_selector.strip():
        try:
            labels = label_selectors.parse(label_selector)
        except label_selectors.SelectorError as err:
            raise errors.bad_request(str(err)) from None
        if labels.empty:
            labels = None
    if field_selector.strip():
        try:
            fields = field_selectors.parse(field_selector)
            # Kinds that register no field-label conversion answer with apimachinery's default wording.
            field_selectors.check_supported(
                fields, resource.selectable_fields(), resource.resource, default_conversion=not resource.field_getters
            )
        except field_selectors.FieldSelectorError as err:
            raise errors.bad_request(str(err)) from None
        if fields.empty:
            fields = None
    return Selection(resource, labels, fields)


def single_name(selection: Selection) -> str | None:
    """The name a `metadata.name=x` field selector pins the selection to, if it does."""
    if selection.fields is None:
        return None
    return selection.fields.requires_exact_match("metadata.name")
