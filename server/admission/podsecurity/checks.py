"""The Pod Security Standards' checks (k8s.io/pod-security-admission/policy), each at the policy versions kube
gives it, with kube's reasons and details word for word, and the evaluator that picks the checks of a level and
version in kube's order: the baseline checks by ID, then the restricted ones by ID, a restricted check replacing
the baseline checks it overrides. A version newer than the newest any check names (and `latest`) is evaluated as
that newest one.

A check reads the pod's (or pod template's) metadata and spec as JSON and answers None (allowed) or a
Violation. Containers are the init containers, then the containers, then the ephemeral containers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from server.admission.podsecurity.levels import BASELINE, PRIVILEGED, RESTRICTED
from server.machinery.validation.names import go_quote
from server.machinery.values import Obj


@dataclass(frozen=True, slots=True)
class Violation:
    """A check's refusal: its succinct reason, and the detail naming what broke it ("" for none)."""

    reason: str
    detail: str = ""


CheckFn = Callable[[Obj, Obj], Violation | None]


@dataclass(frozen=True, slots=True)
class Versioned:
    """One revision of a check, from policy version v1.<minimum> on; overrides: the baseline checks it replaces."""

    minimum: int
    check: CheckFn
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    level: str
    versions: tuple[Versioned, ...]  # by increasing minimum

    def at(self, minor: int) -> Versioned | None:
        """The revision that applies at v1.<minor>; None before the check's first."""
        found = None
        for versioned in self.versions:
            if versioned.minimum <= minor:
                found = versioned
        return found


def forbidden_reason(violations: Sequence[Violation]) -> str:
    """The reasons alone, comma-separated (as kube words a namespace's existing pods)."""
    return ", ".join(v.reason for v in violations)


def forbidden_detail(violations: Sequence[Violation]) -> str:
    """The reasons with their details in parentheses, comma-separated (as kube words one object)."""
    return ", ".join(f"{v.reason} ({v.detail})" if v.detail else v.reason for v in violations)


# --- helpers ---

def _dict(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Obj]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _containers(spec: Obj) -> Iterator[Obj]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from _list(spec.get(key))


def _name(container: Obj) -> str:
    return str(container.get("name") or "")


def _context(container_or_spec: Obj) -> Obj | None:
    context = container_or_spec.get("securityContext")
    return context if isinstance(context, dict) else None


def _quote(items: Sequence[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _containers_phrase(names: Sequence[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_quote(names)}"


def _windows(spec: Obj) -> bool:
    return _dict(spec.get("os")).get("name") == "windows"


def _unless_windows(check: CheckFn) -> CheckFn:
    """From v1.25 a Pod whose spec.os.name is windows is exempt (API validation keeps the fields unset there)."""
    def windows_exempt(metadata: Obj, spec: Obj) -> Violation | None:
        return None if _windows(spec) else check(metadata, spec)
    return windows_exempt


# --- baseline ---

_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def app_armor_profile_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    def allowed(profile: str) -> bool:
        return not profile or profile == "runtime/default" or profile.startswith("localhost/")
    bad = sorted(f"{key}={go_quote(str(value))}" for key, value in _dict(metadata.get("annotations")).items()
                 if key.startswith(_APPARMOR_PREFIX) and not allowed(str(value)))
    if bad:
        return Violation(_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad)),
                         ", ".join(bad))
    return None


_DEFAULT_CAPABILITIES = frozenset((
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
    "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
))


def capabilities_baseline_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad: list[str] = []
    added: set[str] = set()
    for container in _containers(spec):
        context = _context(container)
        capabilities = context.get("capabilities") if context is not None else None
        if isinstance(capabilities, dict):
            extra = {str(c) for c in capabilities.get("add") or [] if str(c) not in _DEFAULT_CAPABILITIES}
            if extra:
                added |= extra
                bad.append(_name(container))
    if bad:
        return Violation("non-default capabilities", f"{_containers_phrase(bad)} must not include "
                                                     f"{_quote(sorted(added))} in securityContext.capabilities.add")
    return None


def host_namespaces_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    shared = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    return Violation("host namespaces", ", ".join(shared)) if shared else None


def host_path_volumes_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad = [str(v.get("name") or "") for v in _list(spec.get("volumes")) if v.get("hostPath") is not None]
    if bad:
        return Violation("hostPath volumes", f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)}")
    return None


def host_ports_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad: list[str] = []
    ports: set[str] = set()
    for container in _containers(spec):
        used = {str(p["hostPort"]) for p in _list(container.get("ports")) if p.get("hostPort")}
        if used:
            ports |= used
            bad.append(_name(container))
    if bad:
        return Violation("hostPort", f"{_containers_phrase(bad)} {_plural('uses', 'use', len(bad))} "
                                     f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")
    return None


def privileged_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad = [_name(c) for c in _containers(spec) if _dict(c.get("securityContext")).get("privileged") is True]
    if bad:
        return Violation("privileged", f"{_containers_phrase(bad)} must not set securityContext.privileged=true")
    return None


def proc_mount_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad: list[str] = []
    types: set[str] = set()
    for container in _containers(spec):
        mount = _dict(container.get("securityContext")).get("procMount")
        if mount is not None and mount != "Default":
            bad.append(_name(container))
            types.add(str(mount))
    if bad:
        return Violation("procMount", f"{_containers_phrase(bad)} must not set securityContext.procMount to "
                                      f"{_quote(sorted(types))}")
    return None


_SELINUX_TYPES = frozenset(("", "container_t", "container_init_t", "container_kvm_t"))


def se_linux_options_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad_types: set[str] = set()
    set_user = set_role = False

    def valid(options: Obj) -> bool:
        nonlocal set_user, set_role
        ok = True
        kind = str(options.get("type") or "")
        if kind not in _SELINUX_TYPES:
            ok = False
            bad_types.add(kind)
        if options.get("user"):
            ok, set_user = False, True
        if options.get("role"):
            ok, set_role = False, True
        return ok

    setters: list[str] = []
    pod_options = _dict(spec.get("securityContext")).get("seLinuxOptions")
    if isinstance(pod_options, dict) and not valid(pod_options):
        setters.append("pod")
    bad = [_name(c) for c in _containers(spec)
           if isinstance(options := _dict(c.get("securityContext")).get("seLinuxOptions"), dict)
           and not valid(options)]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return None
    data = []
    if bad_types:
        data.append(f"{_plural('type', 'types', len(bad_types))} {_quote(sorted(bad_types))}")
    if set_user:
        data.append("user may not be set")
    if set_role:
        data.append("role may not be set")
    return Violation("seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: "
                                       f"{'; '.join(data)}")


_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
_SECCOMP_TYPES = frozenset(("Localhost", "RuntimeDefault"))


def seccomp_profile_baseline_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    """Before v1.19: the alpha annotations."""
    def valid(value: str) -> bool:
        return value in ("runtime/default", "docker/default") or value.startswith("localhost/")
    annotations = _dict(metadata.get("annotations"))
    keys = [_SECCOMP_POD_ANNOTATION, *(_SECCOMP_CONTAINER_PREFIX + _name(c) for c in _containers(spec))]
    bad = sorted({f"{key}={go_quote(str(annotations[key]))}" for key in keys
                  if key in annotations and not valid(str(annotations[key]))})
    if bad:
        return Violation("seccompProfile", f"forbidden {_plural('annotation', 'annotations', len(bad))} "
                                           f"{', '.join(bad)}")
    return None


def _seccomp_type(context: Obj | None) -> str | None:
    """The seccompProfile type set (None: no seccompProfile)."""
    profile = context.get("seccompProfile") if context is not None else None
    return str(profile.get("type") or "") if isinstance(profile, dict) else None


def _seccomp(spec: Obj, *, required: bool) -> Violation | None:
    setters: list[str] = []
    values: set[str] = set()
    pod_set = False
    pod_type = _seccomp_type(_context(spec))
    if pod_type is not None:
        if pod_type not in _SECCOMP_TYPES:
            setters.append("pod")
            values.add(pod_type)
        else:
            pod_set = True
    explicit: list[str] = []
    implicit: list[str] = []
    for container in _containers(spec):
        kind = _seccomp_type(_context(container))
        if kind is not None:
            if kind not in _SECCOMP_TYPES:
                explicit.append(_name(container))
                values.add(kind)
        elif not pod_set:
            implicit.append(_name(container))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type "
                                           f"to {_quote(sorted(values))}")
    if required and implicit:
        return Violation("seccompProfile", f"pod or {_containers_phrase(implicit)} must set "
                                           'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return None


def seccomp_profile_baseline_1_19(metadata: Obj, spec: Obj) -> Violation | None:
    return _seccomp(spec, required=False)


_SYSCTLS_1_0 = frozenset(("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                          "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"))
_SYSCTLS_1_27 = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}


def _sysctls(allowed: frozenset[str]) -> CheckFn:
    def sysctls(metadata: Obj, spec: Obj) -> Violation | None:
        bad = [str(s.get("name") or "") for s in _list(_dict(spec.get("securityContext")).get("sysctls"))
               if str(s.get("name") or "") not in allowed]
        return Violation("forbidden sysctls", ", ".join(bad)) if bad else None
    return sysctls


def windows_host_process_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    def host_process(context: Obj | None) -> bool:
        return context is not None and _dict(context.get("windowsOptions")).get("hostProcess") is True
    setters = ["pod"] if host_process(_context(spec)) else []
    bad = [_name(c) for c in _containers(spec) if host_process(_context(c))]
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return Violation("hostProcess", f"{' and '.join(setters)} must not set "
                                        "securityContext.windowsOptions.hostProcess=true")
    return None


# --- restricted ---

def allow_privilege_escalation_1_8(metadata: Obj, spec: Obj) -> Violation | None:
    bad = [_name(c) for c in _containers(spec)
           if _dict(c.get("securityContext")).get("allowPrivilegeEscalation") is not False]
    if bad:
        return Violation("allowPrivilegeEscalation != false",
                         f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false")
    return None


def capabilities_restricted_1_22(metadata: Obj, spec: Obj) -> Violation | None:
    missing_drop: list[str] = []
    adding: list[str] = []
    forbidden: set[str] = set()
    for container in _containers(spec):
        context = _context(container)
        capabilities = context.get("capabilities") if context is not None else None
        if not isinstance(capabilities, dict):
            missing_drop.append(_name(container))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            missing_drop.append(_name(container))
        extra = {str(c) for c in capabilities.get("add") or [] if c != "NET_BIND_SERVICE"}
        if extra:
            forbidden |= extra
            adding.append(_name(container))
    details = []
    if missing_drop:
        details.append(f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_containers_phrase(adding)} must not include {_quote(sorted(forbidden))} in "
                       "securityContext.capabilities.add")
    return Violation("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                    "projected", "secret")
_RESTRICTED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
                       "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
                       "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO",
                       "storageos")


def restricted_volumes_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    bad: list[str] = []
    types: set[str] = set()
    for volume in _list(spec.get("volumes")):
        if any(volume.get(key) is not None for key in _ALLOWED_VOLUMES):
            continue
        bad.append(str(volume.get("name") or ""))
        types.add(next((key for key in _RESTRICTED_VOLUMES if volume.get(key) is not None), "unknown"))
    if bad:
        kinds = _plural("restricted volume type", "restricted volume types", len(types))
        return Violation("restricted volume types", f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)} "
                                                    f"{_plural('uses', 'use', len(bad))} {kinds} "
                                                    f"{_quote(sorted(types))}")
    return None


def run_as_non_root_1_0(metadata: Obj, spec: Obj) -> Violation | None:
    setters: list[str] = []
    pod_non_root = False
    pod_value = _dict(spec.get("securityContext")).get("runAsNonRoot")
    if pod_value is not None:
        if pod_value is True:
            pod_non_root = True
        else:
            setters.append("pod")
    explicit: list[str] = []
    implicit: list[str] = []
    for container in _containers(spec):
        value = _dict(container.get("securityContext")).get("runAsNonRoot")
        if value is not None:
            if value is not True:
                explicit.append(_name(container))
        elif not pod_non_root:
            implicit.append(_name(container))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return Violation("runAsNonRoot != true", f"{' and '.join(setters)} must not set "
                                                 "securityContext.runAsNonRoot=false")
    if implicit:
        return Violation("runAsNonRoot != true", f"pod or {_containers_phrase(implicit)} must set "
                                                 "securityContext.runAsNonRoot=true")
    return None


def _root(context: Obj | None) -> bool:
    user = context.get("runAsUser") if context is not None else None
    return isinstance(user, int) and not isinstance(user, bool) and user == 0


def run_as_user_1_23(metadata: Obj, spec: Obj) -> Violation | None:
    setters = ["pod"] if _root(_context(spec)) else []
    bad = [_name(c) for c in _containers(spec) if _root(_context(c))]
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return Violation("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")
    return None


def seccomp_profile_restricted_1_19(metadata: Obj, spec: Obj) -> Violation | None:
    return _seccomp(spec, required=True)


_CAPABILITIES_BASELINE = "capabilities_baseline"
_HOST_PATH_VOLUMES = "hostPathVolumes"
_SECCOMP_BASELINE = "seccompProfile_baseline"

CHECKS = (
    Check("appArmorProfile", BASELINE, (Versioned(0, app_armor_profile_1_0),)),
    Check(_CAPABILITIES_BASELINE, BASELINE, (Versioned(0, capabilities_baseline_1_0),)),
    Check("hostNamespaces", BASELINE, (Versioned(0, host_namespaces_1_0),)),
    Check(_HOST_PATH_VOLUMES, BASELINE, (Versioned(0, host_path_volumes_1_0),)),
    Check("hostPorts", BASELINE, (Versioned(0, host_ports_1_0),)),
    Check("privileged", BASELINE, (Versioned(0, privileged_1_0),)),
    Check("procMount", BASELINE, (Versioned(0, proc_mount_1_0),)),
    Check("seLinuxOptions", BASELINE, (Versioned(0, se_linux_options_1_0),)),
    Check(_SECCOMP_BASELINE, BASELINE, (Versioned(0, seccomp_profile_baseline_1_0),
                                        Versioned(19, seccomp_profile_baseline_1_19))),
    Check("sysctls", BASELINE, (Versioned(0, _sysctls(_SYSCTLS_1_0)), Versioned(27, _sysctls(_SYSCTLS_1_27)))),
    Check("windowsHostProcess", BASELINE, (Versioned(0, windows_host_process_1_0),)),
    Check("allowPrivilegeEscalation", RESTRICTED, (Versioned(8, allow_privilege_escalation_1_8),
                                                   Versioned(25, _unless_windows(allow_privilege_escalation_1_8)))),
    Check("capabilities_restricted", RESTRICTED, (
        Versioned(22, capabilities_restricted_1_22, (_CAPABILITIES_BASELINE,)),
        Versioned(25, _unless_windows(capabilities_restricted_1_22), (_CAPABILITIES_BASELINE,)))),
    Check("restrictedVolumes", RESTRICTED, (Versioned(0, restricted_volumes_1_0, (_HOST_PATH_VOLUMES,)),)),
    Check("runAsNonRoot", RESTRICTED, (Versioned(0, run_as_non_root_1_0),)),
    Check("runAsUser", RESTRICTED, (Versioned(23, run_as_user_1_23),)),
    Check("seccompProfile_restricted", RESTRICTED, (
        Versioned(19, seccomp_profile_restricted_1_19, (_SECCOMP_BASELINE,)),
        Versioned(25, _unless_windows(seccomp_profile_restricted_1_19), (_SECCOMP_BASELINE,)))),
)
# The newest version any check names: later versions, `latest` among them, are evaluated as it.
MAX_MINOR = max(v.minimum for check in CHECKS for v in check.versions)


@cache
def checks_for(level: str, minor: int) -> tuple[CheckFn, ...]:
    """The checks of a level (baseline or restricted) at v1.<minor>, in kube's order."""
    def active(wanted: str) -> list[tuple[str, Versioned]]:
        return [(c.id, v) for c in sorted(CHECKS, key=lambda c: c.id)
                if c.level == wanted and (v := c.at(minor)) is not None]
    baseline = active(BASELINE)
    if level == BASELINE:
        return tuple(v.check for _, v in baseline)
    restricted = active(RESTRICTED)
    overridden = {name for _, v in restricted for name in v.overrides}
    return (*(v.check for name, v in baseline if name not in overridden), *(v.check for _, v in restricted))


def evaluate(level: str, minor: int | None, metadata: Obj, spec: Obj) -> list[Violation]:
    """The violations of a pod (or template) at a level and version (None: latest), in kube's order."""
    if level == PRIVILEGED:
        return []
    effective = MAX_MINOR if minor is None or minor > MAX_MINOR else minor
    return [found for check in checks_for(level, effective) if (found := check(metadata, spec)) is not None]
