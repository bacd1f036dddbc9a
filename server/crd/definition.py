"""The CustomResourceDefinition object itself: its defaults and its validation, as apiextensions-apiserver has them.

Defaults (SetDefaults_CustomResourceDefinition and the registry strategy): names.singular is the lowercased
kind, names.listKind the kind + "List", conversion {strategy: None}, a webhook service's port 443; the
storage version joins status.storedVersions on every write.

Validation follows ValidateCustomResourceDefinition(Update): the name must be `<plural>.<group>`
(`metadata.name: Invalid value: "x": must be spec.names.plural+"."+spec.group`), the group a DNS subdomain
with a dot, scope Namespaced or Cluster, exactly one storage version, names DNS-1035 labels (the kind and
list kind in any case), each version's schema (schemacheck.py), subresources, printer columns and
conversion, the stored versions; group and plural never change, scope and kind not once established.
Field paths are kube's (internal-type paths, e.g. spec.conversion.webhookClientConfig).
"""

from __future__ import annotations

from typing import Any

from server.machinery.crdschema import schemacheck
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj

PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
CONVERSION_STRATEGIES = ("None", "Webhook")
CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")
SCOPES = ("Cluster", "Namespaced")
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
MAX_SELECTABLE_FIELDS = 8


# --- reading a CRD ----------------------------------------------------------------------------------------------


def spec(crd: Obj) -> dict[str, Any]:
    value = crd.get("spec")
    return value if isinstance(value, dict) else {}


def versions(crd: Obj) -> list[dict[str, Any]]:
    return [v for v in spec(crd).get("versions") or [] if isinstance(v, dict)]


def storage_version(crd: Obj) -> str:
    return next((v.get("name", "") for v in versions(crd) if v.get("storage")), "")


def conditions(crd: Obj) -> list[dict[str, Any]]:
    return list((crd.get("status") or {}).get("conditions") or [])


def condition_true(crd: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions(crd))


def has_status(version: dict[str, Any]) -> bool:
    return isinstance((version.get("subresources") or {}).get("status"), dict)


def schema_of(version: dict[str, Any]) -> dict[str, Any] | None:
    found = (version.get("schema") or {}).get("openAPIV3Schema")
    return found if isinstance(found, dict) else None


# --- defaults ---------------------------------------------------------------------------------------------------


def default(crd: Obj) -> None:
    """SetDefaults_CustomResourceDefinitionSpec and SetDefaults_ServiceReference, applied as the body is decoded:
    before the request's managed fields are recorded, so its manager owns them, as in kube."""
    s = crd.setdefault("spec", {})
    names_ = s.setdefault("names", {})
    kind = names_.get("kind") or ""
    if not names_.get("singular"):
        names_["singular"] = kind.lower()
    if not names_.get("listKind") and kind:
        names_["listKind"] = kind + "List"
    if not s.get("conversion"):
        s["conversion"] = {"strategy": "None"}
    service = ((s["conversion"].get("webhook") or {}).get("clientConfig") or {}).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def prepare(crd: Obj, old: Obj | None) -> None:
    """The defaults (idempotent: every path that prepares a CRD has them), then the storage version recorded
    among the stored ones (create: a fresh status)."""
    default(crd)
    for version in versions(crd):
        version.setdefault("served", False)
        version.setdefault("storage", False)
    if old is None:
        # The zero status as Go prints it: conditions a nil slice without omitempty.
        crd["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []}
    status = crd.setdefault("status", {})
    stored = status.get("storedVersions") or []  # null: Go's nil slice
    status["storedVersions"] = stored
    current = storage_version(crd)
    if current and current not in stored:
        stored.append(current)


# --- validation -------------------------------------------------------------------------------------------------


def validate(crd: Obj, old: Obj | None) -> list[FieldError]:
    s = spec(crd)
    m = crd.get("metadata") or {}
    errs: list[FieldError] = []
    if old is None:
        name = m.get("name") or ""
        if name and name != f"{(s.get('names') or {}).get('plural', '')}.{s.get('group', '')}":
            errs.append(FieldError.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    errs.extend(_spec(s, require_schema=old is None or _all_versions_have_schema(spec(old))))
    if old is not None:
        errs.extend(_immutable(s, spec(old), established=condition_true(old, "Established")))
    status = crd.get("status") or {}
    errs.extend(_names(status.get("acceptedNames") or {}, "status.acceptedNames"))
    errs.extend(_stored_versions(status.get("storedVersions") or [], versions(crd)))
    if old is None:
        errs.extend(_api_approval(s.get("group") or "", m.get("annotations") or {}))
        if s.get("preserveUnknownFields"):
            errs.append(FieldError.invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                                           "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema "
                                           "instead"))
    return errs


def _all_versions_have_schema(s: dict[str, Any]) -> bool:
    return all(schema_of(v) is not None for v in s.get("versions") or [] if isinstance(v, dict))


def _spec(s: dict[str, Any], *, require_schema: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    group = s.get("group") or ""
    if not group:
        errs.append(FieldError.required("spec.group"))
    elif problems := names.is_dns1123_subdomain(group):
        errs.append(FieldError.invalid("spec.group", group, ",".join(problems)))
    elif len(group.split(".")) < 2:
        errs.append(FieldError.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = s.get("scope") or ""
    if not scope:
        errs.append(FieldError.required("spec.scope"))
    elif scope not in SCOPES:
        errs.append(FieldError.not_supported("spec.scope", scope, SCOPES))
    listed = [v for v in s.get("versions") or [] if isinstance(v, dict)]
    if require_schema:
        for index, version in enumerate(listed):
            if schema_of(version) is None:
                errs.append(FieldError.required(f"spec.versions[{index}].schema.openAPIV3Schema"))
    if _has_defaults(listed) and s.get("preserveUnknownFields"):
        errs.append(FieldError.invalid("spec.preserveUnknownFields", True,
                                       "must be false in order to use defaults in the schema"))
    seen: set[str] = set()
    unique = True
    for index, version in enumerate(listed):
        name = version.get("name") or ""
        if name in seen:
            unique = False
        seen.add(name)
        if problems := names.is_dns1035_label(name):
            errs.append(FieldError.invalid(f"spec.versions[{index}].name", name, ",".join(problems)))
        errs.extend(_version(version, f"spec.versions[{index}]"))
    if not unique:
        errs.append(FieldError.invalid("spec.versions", listed, "must contain unique version names"))
    if sum(1 for v in listed if v.get("storage")) != 1:
        errs.append(FieldError.invalid("spec.versions", _go_versions(s.get("versions"), listed),
                                       "must have exactly one version marked as storage version"))
    names_ = s.get("names") or {}
    for name in ("plural", "singular", "kind", "listKind"):
        if not names_.get(name):
            errs.append(FieldError.required(f"spec.names.{name}"))
    errs.extend(_names(names_, "spec.names"))
    errs.extend(_conversion(s.get("conversion")))
    return errs


def _has_defaults(listed: list[dict[str, Any]]) -> bool:
    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            return "default" in node or any(walk(v) for k, v in node.items() if k not in ("enum", "example"))
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False

    return any(walk(schema_of(v)) for v in listed)


def _version(version: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    warning = version.get("deprecationWarning")
    if warning is not None:
        if not version.get("deprecated"):
            errs.append(FieldError.invalid(f"{path}.deprecationWarning", warning,
                                           "can only be set for deprecated versions"))
        if len(warning) > 256:
            errs.append(FieldError.invalid(f"{path}.deprecationWarning", warning, "must be <= 256 characters long"))
        if not warning:
            errs.append(FieldError.invalid(f"{path}.deprecationWarning", warning, "must not be an empty string"))
    schema = schema_of(version)
    if schema is not None:
        schema_errs = schemacheck.validate_schema(schema, f"{path}.schema.openAPIV3Schema",
                                                  status_enabled=has_status(version))
        errs.extend(schema_errs)
        if not schema_errs:  # kube compiles rules only over a valid structural schema
            from server.machinery.crdschema.cel import rules as cel_rules  # with the first CRD, not at start

            errs.extend(cel_rules.compile_schema(schema, f"{path}.schema.openAPIV3Schema").errors)
    errs.extend(_subresources(version.get("subresources") or {}, f"{path}.subresources"))
    for index, column in enumerate(version.get("additionalPrinterColumns") or []):
        errs.extend(_column(column, f"{path}.additionalPrinterColumns[{index}]"))
    errs.extend(_selectable_fields(version.get("selectableFields") or [], schema, f"{path}.selectableFields"))
    return errs


def _names(n: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in ("plural", "singular"):
        value = n.get(name) or ""
        if value and (problems := names.is_dns1035_label(value)):
            errs.append(FieldError.invalid(f"{path}.{name}", value, ",".join(problems)))
    for name in ("kind", "listKind"):
        value = n.get(name) or ""
        if value and (problems := names.is_dns1035_label(value.lower())):
            errs.append(FieldError.invalid(f"{path}.{name}", value,
                                           "may have mixed case, but should otherwise match: " + ",".join(problems)))
    for index, short in enumerate(n.get("shortNames") or []):
        if problems := names.is_dns1035_label(short):
            errs.append(FieldError.invalid(f"{path}.shortNames[{index}]", short, ",".join(problems)))
    if n.get("kind") and n.get("kind") == n.get("listKind"):
        errs.append(FieldError.invalid(f"{path}.listKind", n["listKind"], "kind and listKind may not be the same"))
    for index, category in enumerate(n.get("categories") or []):
        if problems := names.is_dns1035_label(category):
            errs.append(FieldError.invalid(f"{path}.categories[{index}]", category, ",".join(problems)))
    return errs


def _subresources(sub: dict[str, Any], path: str) -> list[FieldError]:
    scale = sub.get("scale")
    if not isinstance(scale, dict):
        return []
    errs: list[FieldError] = []
    for name, prefixes, wording in (("specReplicasPath", (".spec.",), "should be a json path under .spec"),
                                    ("statusReplicasPath", (".status.",), "should be a json path under .status")):
        value = scale.get(name) or ""
        where = f"{path}.scale.{name}"
        if not value:
            errs.append(FieldError.required(where))
        elif problems := _simple_json_path(value, where):
            errs.extend(problems)
        elif not value.startswith(prefixes):
            errs.append(FieldError.invalid(where, value, wording))
    selector = scale.get("labelSelectorPath")
    if selector:
        where = f"{path}.scale.labelSelectorPath"
        if problems := _simple_json_path(selector, where):
            errs.extend(problems)
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(FieldError.invalid(where, selector, "should be a json path under either .spec or .status"))
    return errs


def _simple_json_path(value: str, path: str) -> list[FieldError]:
    if not value:
        return [FieldError.invalid(path, value, "must not be empty")]
    if value[0] != ".":
        return [FieldError.invalid(path, value, "must be a simple json path starting with .")]
    return []


def _column(column: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not column.get("name"):
        errs.append(FieldError.required(f"{path}.name"))
    kind = column.get("type") or ""
    one_of = "must be one of " + ",".join(PRINTER_COLUMN_TYPES)
    if not kind:
        errs.append(FieldError.required(f"{path}.type", one_of))
    elif kind not in PRINTER_COLUMN_TYPES:
        errs.append(FieldError.invalid(f"{path}.type", kind, one_of))
    fmt = column.get("format") or ""
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        errs.append(FieldError.invalid(f"{path}.format", fmt, "must be one of " + ",".join(PRINTER_COLUMN_FORMATS)))
    json_path = column.get("jsonPath") or ""
    if not json_path:
        errs.append(FieldError.required(f"{path}.JSONPath"))
    else:
        errs.extend(_simple_json_path(json_path, f"{path}.JSONPath"))
    return errs


def _selectable_fields(fields: list[dict[str, Any]], schema: dict[str, Any] | None, path: str) -> list[FieldError]:
    if not fields:
        return []
    if schema is None:
        return [FieldError.invalid(path, "", "may only be set when `version.schema.openAPIV3Schema` is not included")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for index, entry in enumerate(fields):
        where = f"{path}[{index}].jsonPath"
        json_path = entry.get("jsonPath") or ""
        if not json_path:
            errs.append(FieldError.required(where))
            continue
        parts = json_path.lstrip(".").split(".")
        node: dict[str, Any] | None = schema
        for part in parts:
            node = ((node or {}).get("properties") or {}).get(part)
        if parts[0] == "metadata":
            errs.append(FieldError.invalid(where, json_path, "must not point to fields in metadata"))
        elif node is None:
            errs.append(FieldError.invalid(where, json_path, "is an invalid path: does not refer to a valid field"))
        elif node.get("type") not in ("string", "boolean", "integer"):
            errs.append(FieldError.invalid(where, json_path, "must point to a field of type string, boolean or "
                                           "integer. Enum string fields and strings with formats are allowed."))
        if json_path in seen:
            errs.append(FieldError.duplicate(where, json_path))
        seen.add(json_path)
    if len(seen) > MAX_SELECTABLE_FIELDS:
        errs.append(FieldError(names.ErrorType.TOO_MANY, path, len(seen),
                               f"must have at most {MAX_SELECTABLE_FIELDS} items"))
    return errs


def _conversion(conversion: Any) -> list[FieldError]:
    if not isinstance(conversion, dict):
        return []
    errs: list[FieldError] = []
    strategy = conversion.get("strategy") or ""
    if not strategy:
        errs.append(FieldError.required("spec.conversion.strategy"))
    elif strategy not in CONVERSION_STRATEGIES:
        errs.append(FieldError.not_supported("spec.conversion.strategy", strategy, CONVERSION_STRATEGIES))
    webhook = conversion.get("webhook") or {}
    client = webhook.get("clientConfig")
    review = webhook.get("conversionReviewVersions") or []
    if strategy == "Webhook":
        if not isinstance(client, dict):
            errs.append(FieldError.required("spec.conversion.webhookClientConfig",
                                            "required when strategy is set to Webhook"))
        elif ("url" in client) == ("service" in client):
            errs.append(FieldError.required("spec.conversion.webhookClientConfig",
                                            "exactly one of url or service is required"))
        if not review:
            errs.append(FieldError.required("spec.conversion.conversionReviewVersions"))
        elif not any(v in CONVERSION_REVIEW_VERSIONS for v in review):
            errs.append(FieldError.invalid("spec.conversion.conversionReviewVersions", review,
                                           "must include at least one of " + ", ".join(CONVERSION_REVIEW_VERSIONS)))
    else:
        if client is not None:
            errs.append(FieldError.forbidden("spec.conversion.webhookClientConfig",
                                             "should not be set when strategy is not set to Webhook"))
        if review:
            errs.append(FieldError.forbidden("spec.conversion.conversionReviewVersions",
                                             "should not be set when strategy is not set to Webhook"))
    return errs


def _immutable(s: dict[str, Any], old: dict[str, Any], *, established: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    pairs = [("spec.group", s.get("group"), old.get("group")),
             ("spec.names.plural", (s.get("names") or {}).get("plural"), (old.get("names") or {}).get("plural"))]
    if established:
        pairs[:0] = [("spec.scope", s.get("scope"), old.get("scope")),
                     ("spec.names.kind", (s.get("names") or {}).get("kind"), (old.get("names") or {}).get("kind"))]
    for path, new, before in pairs:
        if new != before:
            errs.append(FieldError.invalid(path, new or "", "field is immutable"))
    return errs


def _go_versions(sent: object, listed: list[dict[str, Any]]) -> object:
    """spec.versions as ErrorBody prints a []apiextensions.CustomResourceDefinitionVersion: %#v of a nil or empty
    slice as Go writes it (the typed object keeps no empty list: `[]` sent reads as nil); the versions themselves
    as JSON (Go would print every struct field)."""
    if listed:
        return listed
    kind = "[]apiextensions.CustomResourceDefinitionVersion"
    return names.GoValue(f"{kind}{{}}" if isinstance(sent, list) else f"{kind}(nil)")


def _stored_versions(stored: list[str], listed: list[dict[str, Any]]) -> list[FieldError]:
    path = "status.storedVersions"
    if not stored:  # kube appends the storage versions to a nil slice: none leaves it nil
        return [FieldError.invalid(path, names.GoValue("[]string(nil)"), "must have at least one stored version")]
    errs: list[FieldError] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for version in listed:
        name = version.get("name")
        if version.get("storage") and name not in remaining:
            errs.append(FieldError.invalid(path, stored, f"must have the storage version {name}"))
        remaining.pop(name or "", None)
    for name, index in remaining.items():
        errs.append(FieldError.invalid(f"{path}[{index}]", name, (
            f"missing from spec.versions; {name} was previously a storage version, and must remain in "
            f"spec.versions until a storage migration ensures no data remains persisted in {name} and removes "
            f"{name} from status.storedVersions")))
    return errs


def _api_approval(group: str, annotations: dict[str, str]) -> list[FieldError]:
    """Groups under k8s.io and kubernetes.io need the approval annotation (validateAPIApproval)."""
    protected = group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))
    if not protected or annotations.get(APPROVAL_ANNOTATION):
        return []
    return [FieldError.required(f"metadata.annotations[{APPROVAL_ANNOTATION}]",
                                f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", see '
                                "https://github.com/kubernetes/enhancements/pull/1111")]
