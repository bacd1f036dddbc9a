"""batch/v1 Job and CronJob: registry entries, defaults and validation, as kube-apiserver's
(pkg/apis/batch/v1/defaults.go, pkg/apis/batch/validation, pkg/registry/batch).

A Job's pods are selected by a label the server generates from the Job's uid, unless manualSelector is true:
on create the template gets job-name and controller-uid labels (plain and batch.kubernetes.io/-prefixed) and
the selector {matchLabels: {batch.kubernetes.io/controller-uid: <uid>}}. Its template never changes after
creation (except a suspended, never started Job's scheduling directives); neither does its selector.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from capstan.api.batch.v1 import batch_pb2
from server.kinds import cron, podwarnings, templates
from server.kinds.shaped import retype
from server.kinds.templates import dict_at, get, immutable, nonnegative, semantically_equal
from server.machinery import meta
from server.machinery.patch.values import copy_json
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
NON_INDEXED, INDEXED = "NonIndexed", "Indexed"
TERMINATING_OR_FAILED, FAILED = "TerminatingOrFailed", "Failed"
MAX_INT32 = 2**31 - 1
MAX_PARALLELISM_INDEXED = 100_000
MAX_FAILED_INDEXES = 100_000
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
CRON_JOB_NAME_MAX = 52  # the controller appends an 11-character suffix to name its Jobs


JOB_SCHEMA = ProtoSchema(batch_pb2.Job)
CRON_JOB_SCHEMA = ProtoSchema(batch_pb2.CronJob)


def _status(kind: str) -> Subresource:
    """jobStatusStrategy and cronJobStatusStrategy reset spec only: metadata changes through /status are kept."""
    return Subresource("status", kind, ("get", "patch", "update"), ("status",), metadata_reset=())


# -- Job -----------------------------------------------------------------------------------------------------------


def _default_job_spec(spec: Obj) -> None:
    """SetDefaults_Job's spec part as kube 1.28 runs it (JobPodReplacementPolicy is an alpha gate, off: no
    podReplacementPolicy) and the pod template's defaults."""
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", MAX_INT32 if "backoffLimitPerIndex" in spec else 6)
    spec.setdefault("completionMode", NON_INDEXED)
    spec.setdefault("suspend", False)
    _default_pod_failure_policy(spec)
    templates.default_template(spec.get("template"))


# Fields of kube 1.28's alpha gates (JobBackoffLimitPerIndex, JobPodReplacementPolicy), off: jobStrategy drops
# them from a new Job, and from an update whose old Job did not have them.
ALPHA_FIELDS = ("backoffLimitPerIndex", "maxFailedIndexes", "podReplacementPolicy")


def _drop_alpha_fields(spec: Obj, old_spec: Obj | None) -> None:
    for field in ALPHA_FIELDS:
        if old_spec is None or old_spec.get(field) is None:
            spec.pop(field, None)
    rules = get(spec, "podFailurePolicy", "rules")
    if old_spec is None and isinstance(rules, list):  # FailIndex rules go with backoffLimitPerIndex
        rules[:] = [rule for rule in rules if not (isinstance(rule, dict) and rule.get("action") == "FailIndex")]


def _default_pod_failure_policy(spec: Obj) -> None:
    for rule in get(spec, "podFailurePolicy", "rules") or []:
        for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"


def default_job(obj: Obj) -> None:
    """SetDefaults_Job: the spec's defaults, and a Job without labels takes its template's."""
    spec = dict_at(obj, "spec")
    _default_job_spec(spec)
    template_labels = get(spec, "template", "metadata", "labels")
    if isinstance(template_labels, dict) and not meta.meta(obj).get("labels"):
        meta.meta(obj)["labels"] = copy_json(template_labels)


def prepare_job(obj: Obj, old: Obj | None) -> None:
    """jobStrategy.PrepareForCreate: the generated selector (unless manualSelector) and an empty status.

    Upstream's defaulting makes the Job's labels the very map of its template's labels, so the labels
    PrepareForCreate adds to the template show on the Job too; here the Job's copy is refreshed."""
    if old is not None:
        _drop_alpha_fields(dict_at(obj, "spec"), get(old, "spec") or {})
        return
    spec = dict_at(obj, "spec")
    _drop_alpha_fields(spec, None)
    m = meta.meta(obj)
    shared = not m.get("labels") or m.get("labels") == get(spec, "template", "metadata", "labels")
    if not spec.get("manualSelector"):
        _generate_selector(obj, spec)
    if shared:  # kube defaults the Job it reads back: no labels of its own takes the template's, generated ones too
        m["labels"] = copy_json(get(spec, "template", "metadata", "labels"))
    obj["status"] = {}
    retype(JOB_SCHEMA, obj)


def _generate_selector(obj: Obj, spec: Obj) -> None:
    """generateSelector: the template's job-name and controller-uid labels (unless set), the selector on the uid."""
    m = meta.meta(obj)
    template_labels = dict_at(dict_at(spec, "template"), "metadata", "labels")
    for key in (LEGACY_JOB_NAME, JOB_NAME):
        template_labels.setdefault(key, m.get("name", ""))
    for key in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        template_labels.setdefault(key, m.get("uid", ""))
    dict_at(spec, "selector", "matchLabels").setdefault(CONTROLLER_UID, m.get("uid", ""))


def _has_label(template: object, key: str, expected: str) -> list[FieldError]:
    """ValidateHasLabel on the template's metadata."""
    template_labels = get(template, "metadata", "labels")
    template_labels = template_labels if isinstance(template_labels, dict) else {}
    path = f"spec.template.metadata.labels[{key}]"
    if key not in template_labels:
        return [FieldError.required(path, expected)]
    if template_labels[key] != expected:
        return [FieldError.invalid(path, template_labels, expected)]
    return []


def _generated_selector_errors(obj: Obj, *, prefixed: bool) -> list[FieldError]:
    """validateGeneratedSelector: a generated selector and the labels it selects must be the server's own."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if spec.get("manualSelector") is True or not isinstance(selector, dict):
        return []
    m = meta.meta(obj)
    uid, name = m.get("uid", ""), m.get("name", "")
    errs = [] if uid else [FieldError.required("metadata.uid")]
    template = spec.get("template")
    errs += _has_label(template, LEGACY_CONTROLLER_UID, uid) + _has_label(template, LEGACY_JOB_NAME, name)
    expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
    if prefixed:
        errs += _has_label(template, CONTROLLER_UID, uid) + _has_label(template, JOB_NAME, name)
        expected.update({CONTROLLER_UID: uid, JOB_NAME: name})
    converted = templates.as_selector(selector)
    if converted is not None and not converted.matches(expected):
        errs.append(FieldError.invalid("spec.selector", names.go_label_selector(selector),
                                       "`selector` not auto-generated"))
    return errs


def _job_spec_fields_errors(spec: Obj, path: str) -> list[FieldError]:
    """validateJobSpec: the counts and limits, completion mode, replacement policy, the pod template and its
    restart policy (a Job's pods must stop: OnFailure or Never)."""
    errs: list[FieldError] = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                  "backoffLimitPerIndex", "maxFailedIndexes"):
        errs += nonnegative(spec.get(field), f"{path}.{field}")
    if "maxFailedIndexes" in spec and "backoffLimitPerIndex" not in spec:
        errs.append(FieldError.required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in (NON_INDEXED, INDEXED):
            errs.append(FieldError.not_supported(f"{path}.completionMode", mode, [NON_INDEXED, INDEXED]))
        if mode == INDEXED:
            errs += _indexed_errors(spec, path)
    if mode in (None, NON_INDEXED):
        for field in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if field in spec:
                errs.append(FieldError.invalid(f"{path}.{field}", spec[field], "requires indexed completion mode"))
    if spec.get("successPolicy") is not None and mode != INDEXED:
        errs.append(FieldError.invalid(f"{path}.successPolicy", spec["successPolicy"],
                                       "requires indexed completion mode"))
    if isinstance(spec.get("podFailurePolicy"), dict):
        errs += _pod_failure_policy_errors(spec, f"{path}.podFailurePolicy")
    errs += _replacement_policy_errors(spec, f"{path}.podReplacementPolicy")
    template_path = f"{path}.template"
    errs += templates.pod_template_errors(spec.get("template"), template_path)
    policy = get(spec, "template", "spec", "restartPolicy") or ""
    restart_path = f"{template_path}.spec.restartPolicy"
    if policy in ("", "Always"):
        errs.append(FieldError.required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        errs.append(FieldError.not_supported(restart_path, policy, ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        errs.append(FieldError.invalid(restart_path, policy, 'only "Never" is supported when podFailurePolicy is '
                                                             "specified"))
    return errs


MAX_POD_FAILURE_POLICY_RULES, MAX_ON_EXIT_CODES_VALUES, MAX_ON_POD_CONDITIONS = 20, 255, 20
_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")  # sets.List: sorted
_EXIT_CODE_OPERATORS = ("In", "NotIn")
_CONDITION_STATUSES = ("False", "True", "Unknown")


def _valid_values(values: tuple[str, ...]) -> str:
    """Go's %q of a []string: `["a" "b"]`."""
    return "valid values: [" + " ".join(names.go_quote(v) for v in values) + "]"


def _too_many(path: str, count: int, most: int) -> FieldError:
    return FieldError(names.ErrorType.TOO_MANY, path, count, f"must have at most {most} items")


def _pod_failure_policy_errors(spec: Obj, path: str) -> list[FieldError]:
    """validatePodFailurePolicy: at most 20 rules; each an action, and onExitCodes or onPodConditions (one)."""
    errs: list[FieldError] = []
    rules = get(spec, "podFailurePolicy", "rules") or []
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(_too_many(f"{path}.rules", len(rules), MAX_POD_FAILURE_POLICY_RULES))
    containers = {str(c.get("name") or "") for field in ("containers", "initContainers")
                  for c in get(spec, "template", "spec", field) or [] if isinstance(c, dict)}
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        at = f"{path}.rules[{i}]"
        action = str(rule.get("action") or "")
        if not action:
            errs.append(FieldError.required(f"{at}.action", _valid_values(_ACTIONS)))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(FieldError.invalid(f"{at}.action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _ACTIONS:
            errs.append(FieldError.not_supported(f"{at}.action", action, _ACTIONS))
        exit_codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
        if isinstance(exit_codes, dict):
            errs += _on_exit_codes_errors(exit_codes, f"{at}.onExitCodes", containers)
        if conditions:
            errs += _on_pod_conditions_errors(conditions, f"{at}.onPodConditions")
        if exit_codes is not None and conditions:
            errs.append(FieldError.invalid(at, names.OMIT_VALUE,
                                           "specifying both OnExitCodes and OnPodConditions is not supported"))
        if exit_codes is None and not conditions:
            errs.append(FieldError.invalid(at, names.OMIT_VALUE,
                                           "specifying one of OnExitCodes and OnPodConditions is required"))
    return errs


def _on_pod_conditions_errors(patterns: list[Obj], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(patterns) > MAX_ON_POD_CONDITIONS:
        errs.append(_too_many(path, len(patterns), MAX_ON_POD_CONDITIONS))
    for j, pattern in enumerate(patterns):
        kind, status = str(pattern.get("type") or ""), str(pattern.get("status") or "")
        errs.extend(FieldError.invalid(f"{path}[{j}].type", kind, m) for m in names.is_qualified_name(kind))
        if not status:
            errs.append(FieldError.required(f"{path}[{j}].status", _valid_values(_CONDITION_STATUSES)))
        elif status not in _CONDITION_STATUSES:
            errs.append(FieldError.not_supported(f"{path}[{j}].status", status, _CONDITION_STATUSES))
    return errs


def _on_exit_codes_errors(requirement: Obj, path: str, containers: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = str(requirement.get("operator") or "")
    if not operator:
        errs.append(FieldError.required(f"{path}.operator", _valid_values(_EXIT_CODE_OPERATORS)))
    elif operator not in _EXIT_CODE_OPERATORS:
        errs.append(FieldError.not_supported(f"{path}.operator", operator, _EXIT_CODE_OPERATORS))
    container = requirement.get("containerName")
    if container is not None and container not in containers:
        errs.append(FieldError.invalid(f"{path}.containerName", container,
                                       "must be one of the container or initContainer names in the pod template"))
    given = requirement.get("values")
    values = [v for v in given or [] if isinstance(v, int)]
    shown = names.GoValue("[]int32(nil)" if given is None else "[]int32{" + ", ".join(str(v) for v in values) + "}")
    if not values:
        errs.append(FieldError.invalid(f"{path}.values", shown, "at least one value is required"))
    elif len(values) > MAX_ON_EXIT_CODES_VALUES:
        errs.append(_too_many(f"{path}.values", len(values), MAX_ON_EXIT_CODES_VALUES))
    seen: set[int] = set()
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            errs.append(FieldError.invalid(f"{path}.values[{j}]", value, "must not be 0 for the In operator"))
        if value in seen:
            errs.append(FieldError.duplicate(f"{path}.values[{j}]", value))
        seen.add(value)
    if any(a > b for a, b in itertools.pairwise(values)):
        errs.append(FieldError.invalid(f"{path}.values", shown, "must be ordered"))
    return errs


def _indexed_errors(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    completions, parallelism, max_failed = spec.get("completions"), spec.get("parallelism"), spec.get(
        "maxFailedIndexes")
    if completions is None:
        errs.append(FieldError.required(f"{path}.completions", f"when completion mode is {INDEXED}"))
    if isinstance(parallelism, int) and parallelism > MAX_PARALLELISM_INDEXED:
        errs.append(FieldError.invalid(f"{path}.parallelism", parallelism,
                                       f"must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode "
                                       f"is {INDEXED}"))
    if isinstance(completions, int) and isinstance(max_failed, int) and max_failed > completions:
        errs.append(FieldError.invalid(f"{path}.maxFailedIndexes", max_failed,
                                       "must be less than or equal to completions"))
    if isinstance(max_failed, int) and max_failed > MAX_FAILED_INDEXES:
        errs.append(FieldError.invalid(f"{path}.maxFailedIndexes", max_failed,
                                       f"must be less than or equal to {MAX_FAILED_INDEXES}"))
    return errs


def _replacement_policy_errors(spec: Obj, path: str) -> list[FieldError]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    if spec.get("podFailurePolicy") is not None:
        return [] if policy == FAILED else [FieldError.not_supported(path, policy, [FAILED])]
    if policy not in (FAILED, TERMINATING_OR_FAILED):
        return [FieldError.not_supported(path, policy, [FAILED, TERMINATING_OR_FAILED])]
    return []


def _job_spec_errors(spec: Obj) -> list[FieldError]:
    """ValidateJobSpec: the fields, a selector (required) and that it selects the template."""
    errs = _job_spec_fields_errors(spec, "spec")
    errs += templates.selector_errors(spec.get("selector"), "spec.selector", empty=None)
    selector = templates.as_selector(spec.get("selector"))
    if selector is not None:
        template_labels = get(spec, "template", "metadata", "labels")
        if not selector.matches(template_labels if isinstance(template_labels, dict) else {}):
            errs.append(FieldError.invalid("spec.template.metadata.labels", names.go_string_map(template_labels),
                                           templates.SELECTOR_MISMATCH))
    return errs


def _validate_job_object(obj: Obj, *, prefixed: bool) -> list[FieldError]:
    """ValidateJob (its ObjectMeta part is the generic one)."""
    spec = obj.get("spec") or {}
    errs = _generated_selector_errors(obj, prefixed=prefixed) + _job_spec_errors(spec)
    completions = spec.get("completions")
    if spec.get("completionMode") == INDEXED and isinstance(completions, int) and completions > 0:
        name = meta.meta(obj).get("name", "")
        hostname = f"{name}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            errs.append(FieldError.invalid("metadata.name", name,
                                           f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


# Fields of a suspended, never started Job's template that may change (AllowMutableSchedulingDirectives).
SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _template_update_errors(spec: Obj, old_spec: Obj, old: Obj) -> list[FieldError]:
    template, old_template = spec.get("template"), copy_json(old_spec.get("template") or {})
    if old_spec.get("suspend") is True and get(old, "status", "startTime") is None and isinstance(template, dict):
        new_meta, old_meta = template.get("metadata") or {}, dict_at(old_template, "metadata")
        for field in ("labels", "annotations"):
            _copy_field(new_meta, old_meta, field)
        new_pod, old_pod = template.get("spec") or {}, dict_at(old_template, "spec")
        for field in SCHEDULING_DIRECTIVES:
            _copy_field(new_pod, old_pod, field)
        affinity = new_pod.get("affinity")
        if isinstance(affinity, dict) or isinstance(old_pod.get("affinity"), dict):
            old_affinity = dict_at(old_pod, "affinity")
            _copy_field(affinity if isinstance(affinity, dict) else {}, old_affinity, "nodeAffinity")
            if not old_affinity and affinity is None:
                old_pod.pop("affinity")
    # kube prints the internal PodTemplateSpec here; this prints the template's JSON.
    return immutable(template, old_template, "spec.template")


def _copy_field(source: Obj, target: Obj, field: str) -> None:
    if field in source:
        target[field] = source[field]
    else:
        target.pop(field, None)


def _completions_update_errors(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """validateCompletions (ElasticIndexedJob is on): only an Indexed Job's completions may change, in tandem with
    its parallelism."""
    completions = spec.get("completions")
    if spec.get("completionMode") != INDEXED:
        return immutable(completions, old_spec.get("completions"), "spec.completions")
    if semantically_equal(completions, old_spec.get("completions")) or completions is None:
        return []
    if completions != spec.get("parallelism"):
        return [FieldError.invalid("spec.completions", completions, "can only be modified in tandem with "
                                                                   "spec.parallelism")]
    return []


def validate_job(obj: Obj, old: Obj | None) -> list[FieldError]:
    """jobStrategy.Validate(Update): ValidateJob, and on update ValidateJobUpdate, which validates the spec again
    (causes repeat, as upstream's) before the immutable fields: selector, template, completion mode, ..."""
    if old is None:
        return _validate_job_object(obj, prefixed=True)
    old_template_labels = get(old, "spec", "template", "metadata", "labels") or {}
    prefixed = CONTROLLER_UID in old_template_labels and JOB_NAME in old_template_labels
    spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
    errs = _validate_job_object(obj, prefixed=prefixed) + _job_spec_errors(spec)
    errs += _completions_update_errors(spec, old_spec)
    errs += immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector", names.go_label_selector)
    errs += _template_update_errors(spec, old_spec, old)
    for field in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs += immutable(spec.get(field), old_spec.get(field), f"spec.{field}")
    return errs


def _succeeded(obj: Obj) -> str:
    value = get(obj, "status", "succeeded")
    return str(value if isinstance(value, int) else 0)


# -- CronJob -------------------------------------------------------------------------------------------------------


def default_cron_job(obj: Obj) -> None:
    """SetDefaults_CronJob and the defaults inside its job template (its pod template's, not SetDefaults_Job)."""
    spec = dict_at(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_spec = get(spec, "jobTemplate", "spec")
    if isinstance(job_spec, dict):
        _default_pod_failure_policy(job_spec)
        templates.default_template(job_spec.get("template"))


def _new_status(obj: Obj, old: Obj | None) -> None:
    if old is None:
        obj["status"] = {}


def _schedule_errors(spec: Obj) -> list[FieldError]:
    """validateScheduleFormat as 1.28 has it: a TZ or CRON_TZ in the schedule is admitted (with a warning) unless
    timeZone is set too (1.29 refuses it on create)."""
    schedule = spec.get("schedule") or ""
    if not schedule:
        return [FieldError.required("spec.schedule")]
    errs: list[FieldError] = []
    problem = cron.parse_standard(schedule)
    if problem:
        errs.append(FieldError.invalid("spec.schedule", schedule, problem))
    if "TZ" in schedule and spec.get("timeZone") is not None:
        errs.append(FieldError.invalid("spec.schedule", schedule,
                                       "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    return errs


def _time_zone_errors(time_zone: object) -> list[FieldError]:
    """validateTimeZone."""
    if time_zone is None:
        return []
    path = "spec.timeZone"
    if not isinstance(time_zone, str) or not time_zone:
        return [FieldError.invalid(path, time_zone, "timeZone must be nil or non-empty string")]
    for part in time_zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not TIME_ZONE_PART.match(part):
            return [FieldError.invalid(path, time_zone, f"unknown time zone {time_zone}")]
    errs: list[FieldError] = []
    if time_zone.lower() == "local":
        errs.append(FieldError.invalid(path, time_zone, "timeZone must be an explicit time zone as defined in "
                                                        "https://www.iana.org/time-zones"))
    problem = cron.location_error(time_zone)
    if problem:
        errs.append(FieldError.invalid(path, time_zone, problem))
    return errs


def _job_template_errors(job_template: object) -> list[FieldError]:
    """ValidateJobTemplateSpec: a Job spec whose selector the CronJob controller will generate."""
    path = "spec.jobTemplate.spec"
    job_spec: Any = get(job_template, "spec")
    job_spec = job_spec if isinstance(job_spec, dict) else {}
    errs = _job_spec_fields_errors(job_spec, path)
    if job_spec.get("selector") is not None:
        errs.append(FieldError.invalid(f"{path}.selector", names.go_label_selector(job_spec["selector"]),
                                       "`selector` will be auto-generated"))
    if job_spec.get("manualSelector") is True:
        errs.append(FieldError.not_supported(f"{path}.manualSelector", True, ["nil", "false"]))
    return errs


def validate_cron_job(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateCronJobCreate / ValidateCronJobUpdate (the 52-character name limit on create only)."""
    spec = obj.get("spec") or {}
    old_spec = (old.get("spec") or {}) if old is not None else None
    errs = _schedule_errors(spec)
    errs += nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or spec.get("timeZone") != old_spec.get("timeZone"):
        errs += _time_zone_errors(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        errs.append(FieldError.required("spec.concurrencyPolicy"))
    elif policy not in CONCURRENCY_POLICIES:
        errs.append(FieldError.not_supported("spec.concurrencyPolicy", policy, CONCURRENCY_POLICIES))
    errs += _job_template_errors(spec.get("jobTemplate"))
    errs += nonnegative(spec.get("successfulJobsHistoryLimit"), "spec.successfulJobsHistoryLimit")
    errs += nonnegative(spec.get("failedJobsHistoryLimit"), "spec.failedJobsHistoryLimit")
    name = meta.meta(obj).get("name", "")
    if old is None and len(name) > CRON_JOB_NAME_MAX:
        errs.append(FieldError.invalid("metadata.name", name, f"must be no more than {CRON_JOB_NAME_MAX} characters"))
    return errs


def job_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """jobStrategy.WarningsOnCreate/OnUpdate: on create a name its pods' names cannot take, and the job spec's
    warnings (an Indexed Job too large to track, its pod template's); on update those of the spec only when the
    generation rose."""
    spec = obj.get("spec")
    if old is None:
        return podwarnings.name_warnings(meta.meta(obj).get("name"), podwarnings.POD_NAMES) + \
            podwarnings.job_spec_warnings(spec, "spec")
    return podwarnings.job_spec_warnings(spec, "spec") if podwarnings.generation_changed(obj, old) else []


# kube names the schedule's path "spec.spec.schedule" in this warning.
CRON_TZ_WARNING = ("CRON_TZ or TZ used in spec.spec.schedule is not officially supported, see "
                   "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")


def cron_job_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """cronJobStrategy.WarningsOnCreate/OnUpdate: as a Job's for its job template's spec (on update only when the
    generation rose), then, on every write, a TZ or CRON_TZ in the schedule."""
    spec = get(obj, "spec", "jobTemplate", "spec")
    at = "spec.jobTemplate.spec"
    if old is None:
        out = podwarnings.name_warnings(meta.meta(obj).get("name"), podwarnings.POD_NAMES) + \
            podwarnings.job_spec_warnings(spec, at)
    else:
        out = podwarnings.job_spec_warnings(spec, at) if podwarnings.generation_changed(obj, old) else []
    schedule = get(obj, "spec", "schedule")
    if isinstance(schedule, str) and "TZ" in schedule:
        out.append(CRON_TZ_WARNING)
    return out


JOBS = Resource(
    group="batch", version="v1", resource="jobs", kind="Job", singular="job", namespaced=True,
    schema=JOB_SCHEMA, categories=("all",), subresources=(_status("Job"),),
    field_getters={"status.successful": _succeeded},
    strategy=Declared(
        tracks_generation=True, defaults=templates.retyped(JOB_SCHEMA, default_job), prepare=prepare_job,
        validation=validate_job, warnings=job_warnings,
        garbage_collection="OrphanDependents",  # batch/v1 keeps its pods by default (jobStrategy, for compatibility)
    ),
)
CRON_JOBS = Resource(
    group="batch", version="v1", resource="cronjobs", kind="CronJob", singular="cronjob", namespaced=True,
    schema=CRON_JOB_SCHEMA, short_names=("cj",), categories=("all",),
    subresources=(_status("CronJob"),),
    strategy=Declared(
        tracks_generation=True, defaults=templates.retyped(CRON_JOB_SCHEMA, default_cron_job), prepare=_new_status,
        validation=validate_cron_job, warnings=cron_job_warnings,
    ),
)

KINDS = (JOBS, CRON_JOBS)
