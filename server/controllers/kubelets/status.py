"""What a simulated kubelet reports, as pure functions of time: the Node it registers and a Pod's status.

A Pod's life is a timeline fixed when the simulator first sees it bound (t0, wall clock): init containers run
for `capstan.io/init-seconds` together, then the containers start; each counts as started once its startup
probe's initialDelaySeconds have passed and as ready once its readiness probe's have passed after that (no probe:
at once); a container that is set to exit does so `run_seconds` after it
starts, and is restarted per restartPolicy with the kubelet's back-off (base, doubling, capped), or ends the Pod
(Succeeded when it exited 0, else Failed). `pod_status(pod, life, now)` is the status at `now` and the next
instant it changes, so the simulator writes only what changed and wakes only when something will.

Annotations on the Pod (copied from a template, so a workload's Pods carry them):
- `capstan.io/run-seconds`: seconds a container runs before it exits (default: for restartPolicy Never/OnFailure
  what the containers' commands say, `sleep 300` or `sh -c "sleep 5; exit 1"`, else the simulator's
  `run_seconds`; Always Pods run forever unless another annotation says).
- `capstan.io/exit-code`: the code the containers exit with (default: the first non-zero `exit K` or `false`
  of a Never/OnFailure Pod's commands, else 0).
- `capstan.io/crash-loop`: "true": the containers exit 1 after run-seconds and are restarted with back-off.
- `capstan.io/oom-killed`: "true": the containers are OOMKilled (exit 137) after run-seconds.
- `capstan.io/never-ready`: "true": the containers run but never pass readiness.
- `capstan.io/init-seconds`: seconds the init containers take together (default 0).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from server.controllers.kubelets.config import NodeShape, Timing
from server.controllers.scheduler.model import term_matches
from server.kinds.tolerations import tolerates
from server.machinery.codec import gotime
from server.machinery.codec.quantity import parse_quantity

Obj = dict[str, Any]

RUN_SECONDS = "capstan.io/run-seconds"
EXIT_CODE = "capstan.io/exit-code"
CRASH_LOOP = "capstan.io/crash-loop"
OOM_KILLED = "capstan.io/oom-killed"
NEVER_READY = "capstan.io/never-ready"
INIT_SECONDS = "capstan.io/init-seconds"
HEARTBEAT = "capstan.io/heartbeat"  # on a Node: "stopped" stops its kubelet (no Lease, status or Pod progress)
SIMULATED = "capstan.io/simulated-node"  # on a Node: "true" when a simulator plays its kubelet
KUBELET_VERSION = "v1.28.0"
KUBELET_CONDITIONS = frozenset({"Initialized", "Ready", "ContainersReady", "PodScheduled"})
KUBELET_PORT = 10250
FOREVER = float("inf")


def now_text(seconds: float) -> str:
    return gotime.format_seconds(int(seconds))


def micro_text(seconds: float) -> str:
    return gotime.format_micro(int(seconds), int(seconds % 1 * 1e9))


def node_conditions(heartbeat: float, ready_since: float) -> list[Obj]:
    """The four conditions a healthy kubelet reports (heartbeat: lastHeartbeatTime)."""
    beat, since = now_text(heartbeat), now_text(ready_since)

    def condition(kind: str, status: str, reason: str, message: str) -> Obj:
        return {"type": kind, "status": status, "lastHeartbeatTime": beat, "lastTransitionTime": since,
                "reason": reason, "message": message}

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]


def node_object(shape: NodeShape, index: int, now: float) -> Obj:
    """The Node a kubelet registers (labels as kubelet's: hostname, os, arch and their beta forms; the zone and
    region as a cloud provider labels them), with its status."""
    name = shape.name(index)
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    zone = shape.zone(index)
    if zone:
        labels |= {"topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": shape.region}
    cidr = shape.pod_cidr(index)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0", SIMULATED: "true",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": node_status(shape, index, now, now),
    }


def node_status(shape: NodeShape, index: int, heartbeat: float, ready_since: float) -> Obj:
    name = shape.name(index)
    resources = {"cpu": shape.cpu, "memory": shape.memory, "pods": str(shape.pods),
                 "ephemeral-storage": shape.ephemeral_storage, "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    return {
        "capacity": dict(resources), "allocatable": dict(resources),
        "conditions": node_conditions(heartbeat, ready_since),
        "addresses": [{"type": "InternalIP", "address": shape.internal_ip(index)},
                      {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "nodeInfo": {"machineID": f"capstan-{index:08x}", "systemUUID": f"capstan-{index:08x}",
                     "bootID": f"capstan-boot-{index:08x}", "kernelVersion": "6.1.0-capstan",
                     "osImage": "Capstan simulated node", "containerRuntimeVersion": "capstan://1.0.0",
                     "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                     "operatingSystem": "linux", "architecture": "amd64"},
    }


@dataclass(frozen=True)
class Life:
    """A Pod as the simulator first saw it bound: when (wall clock), with which IP and host IP; and, once its
    deletion is seen, when its containers have stopped (None: not being deleted)."""

    start: float
    pod_ip: str
    host_ip: str
    stop_at: float | None = None


@dataclass(frozen=True)
class Plan:
    """What a Pod's annotations and spec make of its containers."""

    init_seconds: float
    run_seconds: float  # FOREVER: the containers never exit on their own
    exit_code: int
    reason: str  # the terminated state's reason when they exit
    never_ready: bool
    restart_policy: str


def quantity(text: Any) -> float:
    """A resource quantity's value (0 for one that does not parse)."""
    try:
        q = parse_quantity(str(text))
    except ValueError:
        return 0.0
    return float(q.coefficient) * 10.0 ** q.exponent


def pod_requests(pod: Obj) -> dict[str, float]:
    """What a Pod asks of a node, as the kubelet's admission counts it: per resource the larger of its
    containers' sum and its largest init container, plus its overhead."""
    spec = pod.get("spec") or {}

    def requests(container: Obj) -> dict[str, float]:
        asked = (container.get("resources") or {}).get("requests") or {}
        return {str(k): quantity(v) for k, v in asked.items()}

    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        for k, v in requests(container).items():
            total[k] = total.get(k, 0.0) + v
    for container in spec.get("initContainers") or []:
        for k, v in requests(container).items():
            total[k] = max(total.get(k, 0.0), v)
    for k, v in (spec.get("overhead") or {}).items():
        total[str(k)] = total.get(str(k), 0.0) + quantity(v)
    return total


def host_ports(pod: Obj) -> list[tuple[str, str, int]]:
    """The (hostIP, protocol, hostPort) its containers ask of the node (the scheduler's getContainerPorts: ports
    with a hostPort; an empty hostIP is 0.0.0.0, an empty protocol TCP)."""
    out = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in (container or {}).get("ports") or []:
            if isinstance(port, dict) and int(port.get("hostPort") or 0) > 0:
                out.append((str(port.get("hostIP") or "0.0.0.0"), str(port.get("protocol") or "TCP"),
                            int(port["hostPort"])))
    return out


def ports_conflict(wanted: tuple[str, str, int], used: tuple[str, str, int]) -> bool:
    """HostPortInfo.CheckConflict: the same protocol and port, and the same IP or 0.0.0.0 on either side."""
    return wanted[1:] == used[1:] and (wanted[0] == used[0] or "0.0.0.0" in (wanted[0], used[0]))


def _node_affinity_fits(pod: Obj, node: Obj) -> bool:
    """The Pod's nodeSelector and required node affinity against the Node (GetRequiredNodeAffinity.Match)."""
    spec = pod.get("spec") or {}
    labels = {str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()}
    if any(labels.get(str(k)) != str(v) for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not isinstance(required, dict):
        return True
    name = str((node.get("metadata") or {}).get("name") or "")
    return any(term_matches(term, name, labels) for term in required.get("nodeSelectorTerms") or []
               if isinstance(term, dict))


def _untolerated_no_execute(pod: Obj, node: Obj) -> bool:
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, dict)]
    return any(not any(tolerates(t, taint) for t in tolerations)
               for taint in (node.get("spec") or {}).get("taints") or []
               if isinstance(taint, dict) and taint.get("effect") == "NoExecute")


def admission(shape: NodeShape, pod: Obj, admitted: list[Obj], node: Obj | None = None) -> tuple[str, str]:
    """The kubelet's admission of `pod` beside the active Pods `admitted` before it, on `node` (the Node as last
    seen; None skips what needs it): its general predicates in their order, the first failure reported (resource
    fit, node affinity, host ports, then NoExecute taints the Pod does not tolerate). ("", "") when it fits, else
    the rejection's reason and message (OutOfpods, OutOfcpu, OutOfmemory; NodeAffinity, NodePorts,
    TaintToleration: "Pod was rejected: Predicate <name> failed")."""
    if len(admitted) + 1 > shape.pods:
        return "OutOfpods", (f"Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: "
                             f"{len(admitted)}, capacity: {shape.pods}")
    asked = pod_requests(pod)
    for resource, capacity in (("cpu", shape.cpu), ("memory", shape.memory)):
        if not asked.get(resource):
            continue
        used = sum(pod_requests(p).get(resource, 0.0) for p in admitted)
        limit = quantity(capacity)
        if used + asked[resource] > limit:
            scale = 1000 if resource == "cpu" else 1  # the kubelet prints cpu in millicores
            return f"OutOf{resource}", (
                f"Pod was rejected: Node didn't have enough resource: {resource}, requested: "
                f"{round(asked[resource] * scale)}, used: {round(used * scale)}, capacity: {round(limit * scale)}")
    if node is not None and not _node_affinity_fits(pod, node):
        return _predicate("NodeAffinity")
    used_ports = [port for p in admitted for port in host_ports(p)]
    if any(ports_conflict(wanted, used) for wanted in host_ports(pod) for used in used_ports):
        return _predicate("NodePorts")
    if node is not None and _untolerated_no_execute(pod, node):
        return _predicate("TaintToleration")
    return "", ""


def _predicate(name: str) -> tuple[str, str]:
    return name, f"Pod was rejected: Predicate {name} failed"


def _number(value: Any, default: float) -> float:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return default


_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_SLEEP_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Command:
    """What a container's command plainly says of its run: seconds it sleeps (None: none said) and the code it
    exits with."""

    seconds: float | None
    exit_code: int


def command(container: Obj) -> Command | None:
    """The run of a container whose command (with its args) is `sleep N` (GNU sleep's s, m, h and d suffixes and
    `infinity`, summed over several operands), or a shell's `-c` script of such sleeps, `true`, `false` and a last
    `exit K`, joined by `;`, `&&` or new lines; None for any other command (the simulator's defaults then apply)."""
    argv = [str(word) for word in (*(container.get("command") or ()), *(container.get("args") or ()))]
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    if program == "sleep":
        seconds = _sleep(argv[1:])
        return None if seconds is None else Command(seconds, 0)
    if program in _SHELLS and len(argv) == 3 and argv[1] == "-c":
        return _script(argv[2])
    return None


def _sleep(operands: list[str]) -> float | None:
    total = 0.0
    for operand in operands:
        if operand in ("inf", "infinity"):
            return FOREVER
        number, unit = (operand[:-1], operand[-1]) if operand[-1:] in _SLEEP_UNITS else (operand, "s")
        try:
            value = float(number)
        except ValueError:
            return None
        if not value >= 0:
            return None
        total += value * _SLEEP_UNITS[unit]
    return total if operands else None


def _script(script: str) -> Command | None:
    statements = [part.strip() for part in script.replace("&&", ";").replace("\n", ";").split(";")]
    while statements and not statements[-1]:
        statements.pop()  # a trailing separator
    seconds: float | None = None
    code = 0
    for at, statement in enumerate(statements):
        words = statement.split()
        last = at == len(statements) - 1
        if words and words[0] == "sleep" and (slept := _sleep(words[1:])) is not None:
            seconds = (seconds or 0.0) + slept
        elif words in (["true"], [":"]):
            continue
        elif words == ["false"] and last:
            code = 1
        elif len(words) in (1, 2) and words[0] == "exit" and last:
            try:
                code = int(words[1]) % 256 if len(words) == 2 else 0
            except ValueError:
                return None
        else:
            return None
    return Command(seconds, code) if statements else None


def plan(pod: Obj, timing: Timing) -> Plan:
    """A Pod's plan from its annotations, else, for a Pod whose containers exit (restartPolicy Never or
    OnFailure), from what its containers' commands plainly say (command()): the longest sleep, else
    `run_seconds`, and the first non-zero exit code."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    spec = pod.get("spec") or {}
    policy = str(spec.get("restartPolicy") or "Always")
    crash, oom = annotations.get(CRASH_LOOP) == "true", annotations.get(OOM_KILLED) == "true"
    run = timing.run_seconds
    code = 0
    if policy != "Always":
        said = [command(c) for c in spec.get("containers") or () if isinstance(c, dict)]
        slept = [c.seconds for c in said if c is not None and c.seconds is not None]
        if slept:
            run = max(slept)
        code = next((c.exit_code for c in said if c is not None and c.exit_code), 0)
    code = int(_number(annotations.get(EXIT_CODE), code))
    if oom:
        code = 137
    elif crash and code == 0:
        code = 1
    exits = policy != "Always" or crash or oom or EXIT_CODE in annotations or RUN_SECONDS in annotations
    run = _number(annotations.get(RUN_SECONDS), run) if exits else FOREVER
    reason = "OOMKilled" if oom else ("Completed" if code == 0 else "Error")
    return Plan(_number(annotations.get(INIT_SECONDS), 0.0), run, code, reason,
                annotations.get(NEVER_READY) == "true", policy)


def _probe_delay(container: Obj, probe: str) -> float:
    """When a probe first passes, loosely: its initialDelaySeconds (none: at once)."""
    found = container.get(probe)
    if not isinstance(found, dict):
        return 0.0
    return _number(found.get("initialDelaySeconds"), 0.0)


def _started_ready(container: Obj, since: float) -> tuple[float, float]:
    """When a container started at `since` counts as started (its startup probe passed) and as ready (then its
    readiness probe passed)."""
    started = since + _probe_delay(container, "startupProbe")
    return started, started + _probe_delay(container, "readinessProbe")


def _image_id(image: str) -> str:
    return f"capstan.io/{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _container_id(uid: str, name: str, restarts: int) -> str:
    return "capstan://" + hashlib.sha256(f"{uid}/{name}/{restarts}".encode()).hexdigest()


@dataclass(frozen=True)
class Phase:
    """The containers' common state at an instant: running since `since` (restarts so far), waiting in back-off,
    or terminated for good."""

    state: str  # "init", "running", "backoff", "terminated"
    since: float
    restarts: int
    last_exit: float  # when they last exited (backoff/terminated); 0 when never
    next_change: float


def containers_phase(p: Plan, run_start: float, now: float, timing: Timing) -> Phase:
    """Where the restart loop is at `now`: cycle k runs [s_k, s_k + run), exits, waits min(base * 2^k, cap)."""
    if now < run_start:
        return Phase("init", 0.0, 0, 0.0, run_start)
    start, restarts = run_start, 0
    while True:
        end = start + p.run_seconds
        if now < end:
            return Phase("running", start, restarts, 0.0, end)
        final = p.restart_policy == "Never" or (p.restart_policy == "OnFailure" and p.exit_code == 0)
        if final:
            return Phase("terminated", start, restarts, end, FOREVER)
        back = min(timing.backoff_base * 2 ** restarts, timing.backoff_cap)
        restarts += 1
        if now < end + back:
            return Phase("backoff", start, restarts, end, end + back)
        start = end + back


def pod_status(pod: Obj, life: Life, now: float, timing: Timing) -> tuple[Obj, float]:
    """The status the kubelet reports at `now`, and the instant it next changes (FOREVER: never on its own)."""
    spec = pod.get("spec") or {}
    metadata = pod.get("metadata") or {}
    uid = str(metadata.get("uid", ""))
    old = pod.get("status") or {}
    p = plan(pod, timing)
    run_start = life.start + p.init_seconds
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    phase = containers_phase(p, run_start, now, timing)
    next_change = phase.next_change
    stopped = life.stop_at is not None and now >= life.stop_at
    stop_at = life.stop_at
    deadline = _deadline(spec, life, phase)
    expired = deadline is not None and now >= deadline and not stopped
    if expired:  # the kubelet kills a Pod past its activeDeadlineSeconds
        stopped, stop_at = True, deadline
    elif deadline is not None:
        next_change = min(next_change, deadline)
    started_of: dict[str, bool] = {}
    ready_of: dict[str, bool] = {}
    if phase.state == "running" and not stopped:
        for c in containers:
            started_at, ready_at = _started_ready(c, phase.since)
            if p.never_ready:
                ready_at = FOREVER
            started_of[str(c.get("name", ""))] = now >= started_at
            ready_of[str(c.get("name", ""))] = now >= ready_at
            for at in (started_at, ready_at):
                if now < at:
                    next_change = min(next_change, at)
    ready = bool(ready_of) and all(ready_of.values())

    def terminated(code: int, reason: str, started: float, finished: float, cid: str) -> Obj:
        return {"terminated": {"exitCode": code, "reason": reason, "startedAt": now_text(started),
                               "finishedAt": now_text(finished), "containerID": cid}}

    statuses = []
    for c in containers:
        name, image = str(c.get("name", "")), str(c.get("image", ""))
        cid = _container_id(uid, name, phase.restarts)
        entry: Obj = {"name": name, "image": image, "imageID": _image_id(image), "restartCount": phase.restarts,
                      "ready": False, "started": False, "lastState": {}}
        if phase.state == "init":
            entry["state"] = {"waiting": {"reason": "PodInitializing"}}
        elif stopped:
            since = stop_at or now
            code, why = (137, "Error") if expired else (0, "Completed")
            entry |= {"containerID": cid, "state": terminated(code, why, phase.since, since, cid)}
        elif phase.state == "running":
            entry |= {"containerID": cid, "started": started_of.get(name, True), "ready": ready_of.get(name, False),
                      "state": {"running": {"startedAt": now_text(phase.since)}}}
        elif phase.state == "backoff":
            entry |= {"containerID": cid, "state": {"waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off restarting failed container {name} in pod {metadata.get('name')}_"
                           f"{metadata.get('namespace')}({uid})"}},
                "lastState": terminated(p.exit_code, p.reason, phase.since, phase.last_exit, cid)}
        else:
            entry |= {"containerID": cid,
                      "state": terminated(p.exit_code, p.reason, phase.since, phase.last_exit, cid)}
        if phase.restarts and phase.state == "running":
            previous = _container_id(uid, name, phase.restarts - 1)
            entry["lastState"] = terminated(p.exit_code, p.reason, phase.since, phase.since, previous)
        statuses.append(entry)

    init_statuses = []
    for i, c in enumerate(inits):
        name, image = str(c.get("name", "")), str(c.get("image", ""))
        cid = _container_id(uid, name, 0)
        entry = {"name": name, "image": image, "imageID": _image_id(image), "restartCount": 0, "ready": False,
                 "started": False, "lastState": {}}
        if phase.state != "init":
            entry |= {"containerID": cid, "ready": True,
                      "state": terminated(0, "Completed", life.start, run_start, cid)}
        elif i == 0:
            entry |= {"containerID": cid, "started": True,
                      "state": {"running": {"startedAt": now_text(life.start)}}}
        else:
            entry["state"] = {"waiting": {"reason": "PodInitializing"}}
        init_statuses.append(entry)

    if stopped or phase.state == "terminated":
        code = (137 if expired else 0) if stopped else p.exit_code
        pod_phase = "Succeeded" if code == 0 else "Failed"
    else:
        pod_phase = "Pending" if phase.state == "init" else "Running"
    terminal = pod_phase in ("Succeeded", "Failed")

    transitions = _transitions(old)

    def condition(kind: str, value: bool, reason: str = "", message: str = "", at: float = now) -> Obj:
        status = "True" if value else "False"
        entry = {"type": kind, "status": status, "lastProbeTime": None,
                 "lastTransitionTime": transitions.get((kind, status), now_text(at))}
        if reason:
            entry["reason"] = reason
        if message:
            entry["message"] = message
        return entry

    unready = [str(c.get("name", "")) for c in containers
               if terminal or not ready_of.get(str(c.get("name", "")), False)]
    why = "PodCompleted" if terminal else "ContainersNotReady"
    message = "" if terminal else f"containers with unready status: [{' '.join(unready)}]"
    gates_why, gates_message = _gates(spec, old)
    containers_ready = ready and not terminal
    scheduled = next((c for c in old.get("conditions") or [] if isinstance(c, dict) and c.get("type") ==
                      "PodScheduled"), None)
    initialized = phase.state != "init"
    incomplete = f"containers with incomplete status: [{' '.join(str(c.get('name')) for c in inits)}]"
    conditions = [
        condition("Initialized", initialized, *(("PodCompleted",) if terminal and inits else ()),
                  *(() if initialized else ("ContainersNotInitialized", incomplete))),
        condition("Ready", containers_ready and not gates_why,
                  *((why, message) if not containers_ready else (gates_why, gates_message) if gates_why else ())),
        condition("ContainersReady", containers_ready, *(() if containers_ready else (why, message))),
        scheduled or condition("PodScheduled", True, at=life.start),
        # conditions others own (readiness gates, DisruptionTarget, ...) stay as they are
        *(c for c in old.get("conditions") or [] if isinstance(c, dict) and c.get("type") not in KUBELET_CONDITIONS),
    ]
    status: Obj = {
        "phase": pod_phase, "conditions": conditions, "hostIP": life.host_ip, "hostIPs": [{"ip": life.host_ip}],
        "podIP": life.pod_ip, "podIPs": [{"ip": life.pod_ip}], "startTime": now_text(life.start),
        "containerStatuses": statuses,
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    if expired:
        status |= {"reason": "DeadlineExceeded",
                   "message": "Pod was active on the node longer than the specified deadline"}
    if stopped:
        next_change = FOREVER
    elif life.stop_at is not None:
        next_change = min(next_change, life.stop_at)
    return status, next_change


def _deadline(spec: Obj, life: Life, phase: Phase) -> float | None:
    """When spec.activeDeadlineSeconds ends the Pod (None: no deadline, or it ended on its own before)."""
    seconds = spec.get("activeDeadlineSeconds")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None
    deadline = life.start + float(seconds)
    if phase.state == "terminated" and phase.last_exit <= deadline:
        return None
    return deadline


def _gates(spec: Obj, old: Obj) -> tuple[str, str]:
    """Why readiness gates hold the Pod's Ready condition back ("" when none does), as the kubelet words it."""
    conditions = {str(c.get("type")): c for c in old.get("conditions") or [] if isinstance(c, dict)}
    for gate in spec.get("readinessGates") or []:
        kind = str((gate or {}).get("conditionType") or "")
        if kind not in conditions:
            return "ReadinessGatesNotReady", f'corresponding condition of pod readiness gate "{kind}" does not exist.'
        if conditions[kind].get("status") != "True":
            return "ReadinessGatesNotReady", f'the status of pod readiness gate "{kind}" is not "True", but ' \
                                             f'{conditions[kind].get("status")}'
    return "", ""


def _transitions(old: Obj) -> dict[tuple[str, str], str]:
    """The lastTransitionTime of each condition as it stands, kept while its status does not change."""
    return {(str(c.get("type")), str(c.get("status"))): str(c.get("lastTransitionTime"))
            for c in old.get("conditions") or [] if isinstance(c, dict) and c.get("lastTransitionTime")}
