"""Validation every kind gets (ObjectMeta rules, immutable fields), plus the kind's own, as one 422."""

from __future__ import annotations

from collections.abc import Sequence

from server.machinery import errors, meta
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.machinery.values import text_of as _text
from server.registry.resources import Resource


def for_create(resource: Resource, obj: Obj) -> list[FieldError]:
    early = list(resource.strategy.validate_type_meta(obj))
    if early:
        return early
    errs = _object_meta(resource, obj)
    errs.extend(resource.strategy.validate(obj))
    return errs


def for_update(resource: Resource, new: Obj, old: Obj, subresource: str = "") -> list[FieldError]:
    """An update's errors; through a subresource with its own validation (Subresource.validate), that one runs
    instead of the kind's."""
    early = list(resource.strategy.validate_type_meta(new))
    if early:
        return early
    errs = _object_meta(resource, new)
    m, old_m = meta.meta(new), meta.meta(old)
    if m.get("uid") != old_m.get("uid"):
        errs.append(FieldError.invalid("metadata.uid", m.get("uid"), "field is immutable"))
    if old_m.get("deletionTimestamp"):
        added = [f for f in m.get("finalizers") or [] if f not in (old_m.get("finalizers") or [])]
        if added:
            errs.append(FieldError.forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted, found new finalizers "
                + "[]string{" + ", ".join(names.go_quote(f) for f in added) + "}",
            ))
    sub = resource.subresource(subresource) if subresource else None
    if sub is not None and sub.validate is not None:
        errs.extend(sub.validate(new, old))
    else:
        errs.extend(resource.strategy.validate_update(new, old))
    return errs


def raise_if_invalid(resource: Resource, obj: Obj, errs: Sequence[FieldError]) -> None:
    if not errs:
        return
    name = meta.meta(obj).get("name") or ""
    causes = [errors.Cause(c["reason"], c.get("message", ""), c.get("field", "")) for c in (e.cause() for e in errs)]
    # kube names the kind the object says it is (BeforeCreate/BeforeUpdate read it from the object): the resource's,
    # but for a custom resource whose body said another; and the group of its internal type, which for a resource
    # kept in another's storage is that storage's (an events.k8s.io Event is a core Event inside)
    kind = obj.get("kind")
    group = resource.stored_as.group if resource.stored_as is not None else resource.group
    raise errors.invalid(kind if isinstance(kind, str) and kind else resource.kind, group, name,
                         names.join_errors(errs), causes)


def _object_meta(resource: Resource, obj: Obj) -> list[FieldError]:
    m = meta.meta(obj)
    return names.validate_object_meta(
        name=_text(m.get("name")),
        generate_name=_text(m.get("generateName")),
        namespace=_text(m.get("namespace")),
        namespaced=resource.namespaced,
        name_fn=resource.strategy.validate_name,
        labels=m.get("labels") or {},
        annotations=m.get("annotations") or {},
        generation=m.get("generation") or 0,
        owner_references=m.get("ownerReferences"),
        finalizers=m.get("finalizers"),
        standard_finalizers=resource.strategy.standard_finalizers,
    )


