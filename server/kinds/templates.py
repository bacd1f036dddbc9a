"""What the workload kinds share: label selectors over a pod template, the template's defaults and validation,
and the small field rules of apimachinery's validation (non-negative numbers, immutable fields).

Messages and paths are kube-apiserver's (pkg/apis/apps/validation, pkg/apis/batch/validation,
pkg/apis/core/validation). A workload whose selector does not select its own template is refused, e.g.

    spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match
    template `labels`

Note the pod template's own labels and annotations are reported at spec.template.labels and
spec.template.annotations (no "metadata"), as ValidatePodTemplateSpec reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.kinds.podspec import default_pod_spec, validate_pod_spec
from server.kinds.shaped import retype
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Schema

NEGATIVE = "must be greater than or equal to 0"  # apimachinery's IsNegativeErrorMsg
IMMUTABLE = "field is immutable"
SELECTOR_MISMATCH = "`selector` does not match template `labels`"


def dict_at(obj: Obj, *path: str) -> Obj:
    """The object at `path` (created empty where missing), to default fields in place."""
    for part in path:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    return obj


def get(obj: object, *path: str) -> Any:
    """The value at `path`, or None where anything along it is missing."""
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


Prepare = Callable[[Obj, Obj | None], None]


def retyped(schema: Schema, default: Callable[[Obj], None]) -> Callable[[Obj], None]:
    """A kind's defaulting, then the object typed again by its schema (server/kinds/shaped.py), so what the
    defaults added sits where kube-apiserver prints it: fields in Go's struct order, map keys sorted."""

    def run(obj: Obj) -> None:
        default(obj)
        retype(schema, obj)

    return run


def nonnegative(value: object, path: str) -> list[FieldError]:
    """ValidateNonnegativeField."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [FieldError.invalid(path, value, NEGATIVE)]
    return []


def semantically_equal(a: object, b: object) -> bool:
    """apiequality.Semantic.DeepEqual on JSON forms: an absent, null, empty list or empty object value is equal to
    any other of those, as Go's nil and empty slices and maps are."""
    return semantic_form(a) == semantic_form(b)


def semantic_form(value: object) -> object:
    """What semantically_equal compares: `value` without its null, empty list and empty object members, at every
    depth; a new value, `value` untouched. Two values are semantically equal when their forms are equal (==)."""
    if isinstance(value, dict):
        out = {k: semantic_form(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [semantic_form(v) for v in value]
    return value


def immutable(new: object, old: object, path: str, shown: Callable[[object], object] = lambda v: v
              ) -> list[FieldError]:
    """ValidateImmutableField: `<path>: Invalid value: <new>: field is immutable`; `shown` prints the value as Go
    prints the field's type, where that is not its JSON (a LabelSelector: names.go_label_selector)."""
    return [] if semantically_equal(new, old) else [FieldError.invalid(path, shown(new), IMMUTABLE)]


# -- selectors -----------------------------------------------------------------------------------------------------


def selector_errors(selector: object, path: str, *, empty: str | None, required: bool = True) -> list[FieldError]:
    """spec.selector: Required when absent (if `required`), ValidateLabelSelector's errors, and Invalid with
    `empty` as detail when it has no requirement at all (None: an empty selector is fine)."""
    if not isinstance(selector, dict):
        return [FieldError.required(path)] if required else []
    errs = labels.validate_label_selector(selector, path)
    if empty is not None and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append(FieldError.invalid(path, names.go_label_selector(selector), empty))
    return errs


def as_selector(selector: object) -> labels.Selector | None:
    """metav1.LabelSelectorAsSelector: None when it does not convert (absent is labels.Nothing, which matches none)."""
    try:
        return labels.from_label_selector(selector if isinstance(selector, dict) else None)
    except (labels.SelectorError, TypeError):
        return None


def selects_template(selector: labels.Selector, template: object, path: str) -> list[FieldError]:
    """The selector must match the template's labels (a non-empty selector; labels.Nothing never matches)."""
    template_labels = get(template, "metadata", "labels")
    if selector.empty or selector.matches(template_labels if isinstance(template_labels, dict) else {}):
        return []
    return [FieldError.invalid(f"{path}.metadata.labels", names.go_string_map(template_labels), SELECTOR_MISMATCH)]


# -- pod templates -------------------------------------------------------------------------------------------------


def default_template(template: object) -> None:
    """The pod template's spec defaults (SetDefaults_PodSpec and inside), as kube applies them on every write."""
    if isinstance(template, dict):
        default_pod_spec(dict_at(template, "spec"))


def template_meta_errors(template: object, path: str) -> list[FieldError]:
    """The template's labels and annotations, at <path>.labels and <path>.annotations."""
    meta = get(template, "metadata")
    meta = meta if isinstance(meta, dict) else {}
    return (names.validate_labels(meta.get("labels") or {}, f"{path}.labels")
            + names.validate_annotations(meta.get("annotations") or {}, f"{path}.annotations"))


def pod_template_errors(template: object, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: the template's labels and annotations, then its pod spec, which may hold no
    ephemeral containers (those are only ever added to a running Pod)."""
    spec = get(template, "spec")
    spec = spec if isinstance(spec, dict) else {}
    errs = template_meta_errors(template, path) + validate_pod_spec(spec, f"{path}.spec")
    if spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden(f"{path}.spec.ephemeralContainers",
                                         "ephemeral containers not allowed in pod template"))
    return errs


def always_restarting(template: object, path: str, kind: str) -> list[FieldError]:
    """Controllers that keep pods running: restartPolicy Always only, and no activeDeadlineSeconds."""
    errs: list[FieldError] = []
    policy = get(template, "spec", "restartPolicy") or ""
    if policy != "Always":
        errs.append(FieldError.not_supported(f"{path}.spec.restartPolicy", policy, ["Always"]))
    if get(template, "spec", "activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden(f"{path}.spec.activeDeadlineSeconds",
                                         f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def replica_set_template_errors(spec: Obj, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (Deployments and ReplicaSets): selector match, the template, and a pod
    that restarts forever. A selector that does not convert is reported as `invalid label selector`."""
    selector = as_selector(spec.get("selector"))
    template = spec.get("template")
    if selector is None:
        return [FieldError.invalid(f"{path}.selector", spec.get("selector"), "invalid label selector")]
    template_path = f"{path}.template"
    return (selects_template(selector, template, template_path) + pod_template_errors(template, template_path)
            + always_restarting(template, template_path, "ReplicaSet"))
