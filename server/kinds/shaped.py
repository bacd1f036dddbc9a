"""Objects put back into their kind's printed shape after a kind's hooks changed them.

Defaulting adds members to an already typed object (a body decoded by the kind's schema); Go prints a
struct's fields in declaration order and some zero fields always, so an object whose hooks added
`terminationMessagePath` after `securityContext`, or left a Go struct out, is typed once more before it
is stored.
"""

from __future__ import annotations

from server.machinery.values import Obj
from server.registry.resources import Schema


def retype(schema: Schema, obj: Obj) -> None:
    """obj, in place, as `schema` types and orders it (kind and apiVersion, if present, stay first)."""
    normalized, _ = schema.normalize(obj)
    head: Obj = {key: obj[key] for key in ("kind", "apiVersion") if key in obj}
    obj.clear()
    obj.update(head)
    obj.update(normalized)
