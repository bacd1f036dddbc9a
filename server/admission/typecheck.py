"""status.typeChecking of a ValidatingAdmissionPolicy, as kube 1.28's type checker writes it
(plugin/policy/validating/typechecking.go): each validation's expression and messageExpression checked against
the schema of every kind its matchConstraints' resourceRules name, where the schema is known.

Known here: custom resources, by their CRD's openAPIV3Schema for the rule's version (apiGroups, apiVersions and
resources without wildcards or subresources, as kube). An expression reading a field the schema does not declare
warns, one line per kind:

    {"fieldRef": "spec.validations[0].expression",
     "warning": "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'colour'\n"
                " | object.spec.colour == 'red'\n | ...........^"}

`object` and `oldObject` are typed by the schema (metadata, apiVersion and kind as every object has them);
`params`, `request`, `namespaceObject`, `authorizer` and `variables` are not typed (dyn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from server.machinery.crdschema.cel import check, parse
from server.machinery.values import Obj

_UNTYPED = ("request", "params", "namespaceObject", "authorizer", "variables")


def _kinds(spec: Obj, crds: Iterable[Obj]) -> list[tuple[str, Mapping[str, Any]]]:
    """(GroupVersionKind string, openAPIV3Schema) of every kind the resourceRules name whose schema is known."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    by_resource = {(str((c.get("spec") or {}).get("group") or ""),
                    str(((c.get("spec") or {}).get("names") or {}).get("plural") or "")): c for c in crds}
    for rule in ((spec.get("matchConstraints") or {}).get("resourceRules") or []):
        for group in rule.get("apiGroups") or []:
            for version in rule.get("apiVersions") or []:
                for resource in rule.get("resources") or []:
                    if "*" in (group, version, resource) or "/" in resource:
                        continue
                    crd = by_resource.get((group, resource))
                    if crd is None:
                        continue
                    crd_spec = crd.get("spec") or {}
                    for served in crd_spec.get("versions") or []:
                        schema = (served.get("schema") or {}).get("openAPIV3Schema")
                        if served.get("name") == version and isinstance(schema, Mapping):
                            gvk = f"{group}/{version}, Kind={(crd_spec.get('names') or {}).get('kind') or ''}"
                            if all(gvk != known for known, _ in found):
                                found.append((gvk, schema))
    return found


def _object_type(schema: Mapping[str, Any]) -> check.Type:
    properties = {**(schema.get("properties") or {}), "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                  "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return check.type_of({**schema, "type": "object", "properties": properties}, root=True)


def _problems(text: str, object_type: check.Type) -> str:
    # the rules module loads the CEL engine: imported with the first policy checked, never at start
    from server.machinery.crdschema.cel.rules import display_issues, engine_compile

    program, syntax = engine_compile(text)
    if program is None:
        return syntax
    checker = check.Checker({"object": object_type, "oldObject": object_type,
                             **{name: check.DYN for name in _UNTYPED}})
    checker.walk(parse.parse(text))
    return display_issues(text, checker.errors) if checker.errors else ""


def type_checking(policy: Obj, crds: Iterable[Obj]) -> Obj:
    """The policy's status.typeChecking."""
    spec = policy.get("spec") or {}
    kinds = [(gvk, _object_type(schema)) for gvk, schema in _kinds(spec, crds)]
    warnings: list[Obj] = []
    for i, validation in enumerate(spec.get("validations") or []):
        for field in ("expression", "messageExpression"):
            text = str(validation.get(field) or "")
            if not text:
                continue
            lines = [f"{gvk}: {problem}" for gvk, object_type in kinds if (problem := _problems(text, object_type))]
            if lines:
                warnings.append({"fieldRef": f"spec.validations[{i}].{field}", "warning": "\n".join(lines)})
    return {"expressionWarnings": warnings} if warnings else {}
