"""Simulated nodes on the command line: `--nodes N` and its companions for `capstan serve` and `capstan core`,
the node lifecycle controller's and podgc's kube-controller-manager flags, and `capstan nodes`, the same
simulator (server/controllers/kubelets/) as a client of any API server, as kwok runs.

`capstan nodes --kubeconfig KC --count N` reads the kubeconfig (its current context: server, CA, client
certificate or token), follows Pods and Nodes with list and watch, and writes through the REST API with aiohttp.
When the kubeconfig's user may impersonate `system:node:<name>` (a SelfSubjectAccessReview says so, and the
impersonated node may update its Node's status), each node's writes carry Impersonate-User
`system:node:<name>` and Impersonate-Group `system:nodes`, as each kubelet authenticates; otherwise it writes as
itself.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging
import os
import signal
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from server.controllers.kubelets.api import NODES, PODS, ApiFailure, Kind
from server.controllers.kubelets.config import DEFAULT_SHAPE, DEFAULT_TIMING, NodesConfig, NodeShape, Timing
from server.controllers.nodelifecycle import LifecycleConfig
from server.controllers.podgc import PodGCConfig
from server.startup.controllers import NodeFlags
from storage.tasks import cancel_each

log = logging.getLogger("capstan.nodes")
Obj = dict[str, Any]
RELIST_PAUSE = 1.0  # seconds before listing again after a failed watch


MAX_NODES = 1024  # one /24 each of the cluster CIDR 10.244.0.0/14


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= MAX_NODES:
        raise argparse.ArgumentTypeError(f"between 0 and {MAX_NODES} nodes")
    return value


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def shape_flags(parser: argparse.ArgumentParser) -> None:
    """What each simulated node has and how its kubelet paces Pods."""
    group = parser.add_argument_group("simulated nodes")
    group.add_argument("--node-cpu", default=DEFAULT_SHAPE.cpu, help="each node's cpu capacity and allocatable")
    group.add_argument("--node-memory", default=DEFAULT_SHAPE.memory, help="each node's memory (default 256Gi)")
    group.add_argument("--node-pods", type=int, default=DEFAULT_SHAPE.pods, help="each node's pod capacity")
    group.add_argument("--node-zones", type=_names, default=DEFAULT_SHAPE.zones, metavar="ZONES",
                       help="zones the nodes spread over, round robin (topology.kubernetes.io/zone)")
    group.add_argument("--node-pod-run-seconds", type=float, default=DEFAULT_TIMING.run_seconds, metavar="SECONDS",
                       help="how long a container that is to exit runs (restartPolicy Never/OnFailure, and Pods "
                            "with a failure annotation) unless capstan.io/run-seconds says")
    group.add_argument("--node-pod-stop-seconds", type=float, default=DEFAULT_TIMING.stop_seconds,
                       metavar="SECONDS", help="how long stopping a deleted Pod's containers takes (at most its "
                                               "grace period)")
    group.add_argument("--node-status-report-seconds", type=float, default=DEFAULT_TIMING.status_report,
                       metavar="SECONDS", help="the kubelet's nodeStatusReportFrequency (default 300)")


def serve_flags(parser: argparse.ArgumentParser) -> None:
    """`--nodes N` and the node controllers' flags, for `serve` and `core`."""
    parser.add_argument("--nodes", type=_count, default=0, metavar="N",
                        help="simulated nodes whose kubelets the leading core plays (default 0)")
    shape_flags(parser)
    group = parser.add_argument_group("node controllers (--controllers nodelifecycle,podgc)")
    lifecycle, gc = LifecycleConfig(), PodGCConfig()
    group.add_argument("--node-monitor-period", type=float, default=lifecycle.monitor_period, metavar="SECONDS")
    group.add_argument("--node-monitor-grace-period", type=float, default=lifecycle.grace_period,
                       metavar="SECONDS", help="heartbeat silence before a node is Unknown (default 40)")
    group.add_argument("--node-startup-grace-period", type=float, default=lifecycle.startup_grace_period,
                       metavar="SECONDS")
    group.add_argument("--node-eviction-rate", type=float, default=lifecycle.eviction_rate,
                       help="nodes per second tainted NoExecute in a healthy zone (default 0.1)")
    group.add_argument("--secondary-node-eviction-rate", type=float, default=lifecycle.secondary_eviction_rate,
                       help="the same in a partially disrupted large zone (default 0.01)")
    group.add_argument("--unhealthy-zone-threshold", type=float, default=lifecycle.unhealthy_zone_threshold,
                       help="share of not-Ready nodes that makes a zone partially disrupted (default 0.55)")
    group.add_argument("--large-cluster-size-threshold", type=int, default=lifecycle.large_cluster_threshold,
                       help="zone size above which a partially disrupted zone keeps the secondary rate (50)")
    group.add_argument("--terminated-pod-gc-threshold", type=int, default=gc.terminated_threshold,
                       help="terminated Pods kept before podgc deletes the oldest (default 12500; 0: never)")


def shape(args: argparse.Namespace) -> NodeShape:
    return NodeShape(cpu=args.node_cpu, memory=args.node_memory, pods=args.node_pods, zones=tuple(args.node_zones))


def timing(args: argparse.Namespace) -> Timing:
    return Timing(run_seconds=args.node_pod_run_seconds, stop_seconds=args.node_pod_stop_seconds,
                  status_report=args.node_status_report_seconds)


def nodes_config(args: argparse.Namespace) -> NodesConfig | None:
    return NodesConfig(args.nodes, shape(args), timing(args)) if args.nodes > 0 else None


def node_flags(args: argparse.Namespace) -> NodeFlags:
    return NodeFlags(LifecycleConfig(args.node_monitor_period, args.node_monitor_grace_period,
                                     args.node_startup_grace_period, args.node_eviction_rate,
                                     args.secondary_node_eviction_rate, args.unhealthy_zone_threshold,
                                     args.large_cluster_size_threshold),
                     PodGCConfig(terminated_threshold=args.terminated_pod_gc_threshold))


def command_flags(parser: argparse.ArgumentParser) -> None:
    """`capstan nodes`."""
    parser.add_argument("--kubeconfig", type=Path, default=Path(os.environ.get("KUBECONFIG") or
                                                               Path.home() / ".kube" / "config"),
                        help="the API server and credentials (default $KUBECONFIG, else ~/.kube/config)")
    parser.add_argument("--count", type=_count, default=1, metavar="N", help="nodes to simulate (default 1)")
    parser.add_argument("--first", type=int, default=0, metavar="I",
                        help="index of the first node (several simulators split a cluster's nodes)")
    parser.add_argument("--node-name-prefix", default=DEFAULT_SHAPE.prefix, help="node names: <prefix><index>")
    parser.add_argument("--stop-heartbeat", type=_names, default=(), metavar="NAMES",
                        help="nodes whose kubelets start silent (as the capstan.io/heartbeat: stopped annotation)")
    shape_flags(parser)


# --- kubeconfig ------------------------------------------------------------------------------------------------


class Kubeconfig:
    """The current context of a kubeconfig: the server, an SSL context with its CA and client certificate, and
    a bearer token if any. Embedded (-data) certificates are written to a private temporary directory, which
    close() removes."""

    def __init__(self, path: Path) -> None:
        import yaml  # here: only `capstan nodes` reads kubeconfigs

        config = yaml.safe_load(path.read_text()) or {}
        contexts = {c["name"]: c.get("context") or {} for c in config.get("contexts") or []}
        context = contexts.get(config.get("current-context") or "", {})
        clusters = {c["name"]: c.get("cluster") or {} for c in config.get("clusters") or []}
        users = {u["name"]: u.get("user") or {} for u in config.get("users") or []}
        cluster = clusters.get(context.get("cluster") or "", {})
        user = users.get(context.get("user") or "", {})
        self.server = str(cluster.get("server") or "").rstrip("/")
        if not self.server:
            raise ValueError(f"{path}: the current context names no server")
        self._dir = tempfile.TemporaryDirectory(prefix="capstan-nodes-")
        base = path.parent

        def file_of(key: str, where: Obj) -> str | None:
            if where.get(f"{key}-data"):
                target = Path(self._dir.name) / key
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(base64.b64decode(where[f"{key}-data"]))
                return str(target)
            if where.get(key):
                return str(base / str(where[key]))
            return None

        self.token = str(user.get("token") or "")
        if not self.token and user.get("tokenFile"):
            self.token = (base / str(user["tokenFile"])).read_text().strip()
        self.ssl: ssl.SSLContext | bool = False
        if self.server.startswith("https://"):
            context_ = ssl.create_default_context(cafile=file_of("certificate-authority", cluster))
            if cluster.get("insecure-skip-tls-verify"):
                context_.check_hostname = False
                context_.verify_mode = ssl.CERT_NONE
            cert, key = file_of("client-certificate", user), file_of("client-key", user)
            if cert:
                context_.load_cert_chain(cert, key)
            self.ssl = context_

    def close(self) -> None:
        self._dir.cleanup()


# --- the REST API ----------------------------------------------------------------------------------------------


def _url_path(kind: Kind, namespace: str, name: str = "", subresource: str = "") -> str:
    base = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
    parts = [base]
    if namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(kind.resource)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class RestNodeApi:
    """NodeApi over HTTP (server/controllers/kubelets/api.py), impersonating each node when `impersonate`."""

    def __init__(self, session: aiohttp.ClientSession, config: Kubeconfig) -> None:
        self._session = session
        self._config = config
        self.impersonate = False

    def _headers(self, node: str, content_type: str = "application/json") -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        if self._config.token:
            headers["Authorization"] = f"Bearer {self._config.token}"
        if self.impersonate and node:
            headers |= {"Impersonate-User": f"system:node:{node}", "Impersonate-Group": "system:nodes"}
        return headers

    async def call(self, method: str, url_path: str, *, node: str = "", body: Obj | None = None,
                   content_type: str = "application/json", query: dict[str, str] | None = None) -> Obj:
        async with self._session.request(
                method, self._config.server + url_path, params=query, ssl=self._config.ssl,
                data=orjson.dumps(body) if body is not None else None,
                headers=self._headers(node, content_type)) as response:
            data = await response.read()
            answer: Obj = orjson.loads(data) if data else {}
            if response.status >= 300:
                raise ApiFailure(response.status, str(answer.get("message") or data[:200]))
            return answer

    async def create(self, kind: Kind, namespace: str, body: Obj, *, node: str) -> Obj:
        return await self.call("POST", _url_path(kind, namespace), node=node, body=body)

    async def get(self, kind: Kind, namespace: str, name: str, *, node: str) -> Obj:
        return await self.call("GET", _url_path(kind, namespace, name), node=node)

    async def update(self, kind: Kind, namespace: str, body: Obj, *, node: str) -> Obj:
        name = str((body.get("metadata") or {}).get("name", ""))
        return await self.call("PUT", _url_path(kind, namespace, name), node=node, body=body)

    async def patch(self, kind: Kind, namespace: str, name: str, patch: Obj, *, node: str,
                    subresource: str = "") -> Obj:
        return await self.call("PATCH", _url_path(kind, namespace, name, subresource), node=node, body=patch,
                               content_type="application/merge-patch+json")

    async def delete(self, kind: Kind, namespace: str, name: str, *, node: str, uid: str, grace: int) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace,
                "preconditions": {"uid": uid}}
        await self.call("DELETE", _url_path(kind, namespace, name), node=node, body=body)

    async def may_impersonate(self, node: str) -> bool:
        """Whether this user may impersonate the node, and the node may then update its Node's status."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": "impersonate", "resource": "users",
                                                  "name": f"system:node:{node}"}}}
        url = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        try:
            if not (await self.call("POST", url, body=review)).get("status", {}).get("allowed"):
                return False
            self.impersonate = True
            review["spec"] = {"resourceAttributes": {"verb": "patch", "resource": "nodes", "subresource": "status",
                                                     "name": node}}
            allowed = bool((await self.call("POST", url, node=node, body=review)).get("status", {}).get("allowed"))
        except ApiFailure:
            allowed = False
        self.impersonate = allowed
        return allowed

    async def follow(self, kind: Kind, changed: Callable[[Obj], None], deleted: Callable[[Obj], None],
                     listed: asyncio.Event) -> None:
        """List, then watch from the list's resourceVersion; again after a 410 or a dropped watch. A relist
        hands over what vanished as deletions."""
        known: dict[tuple[str, str], Obj] = {}
        while True:
            try:
                answer = await self.call("GET", _url_path(kind, ""))
                fresh = {_key(o): o for o in answer.get("items") or []}
                for key, obj in known.items():
                    if key not in fresh:
                        deleted(obj)
                for obj in fresh.values():
                    changed(obj)
                known = fresh
                listed.set()
                await self._watch(kind, str((answer.get("metadata") or {}).get("resourceVersion") or ""), known,
                                  changed, deleted)
            except (aiohttp.ClientError, ApiFailure, TimeoutError, ValueError) as err:
                log.info("following %s: %s; listing again", kind.resource, err)
            await asyncio.sleep(RELIST_PAUSE)

    async def _watch(self, kind: Kind, version: str, known: dict[tuple[str, str], Obj],
                     changed: Callable[[Obj], None], deleted: Callable[[Obj], None]) -> None:
        query = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self._session.get(self._config.server + _url_path(kind, ""), params=query, ssl=self._config.ssl,
                                     headers=self._headers(""), timeout=timeout) as response:
            if response.status >= 300:
                raise ApiFailure(response.status, (await response.read())[:200].decode(errors="replace"))
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    kind_of, obj = event.get("type"), event.get("object") or {}
                    if kind_of == "ERROR":
                        raise ApiFailure(int(obj.get("code") or 500), str(obj.get("message") or ""))
                    if kind_of == "DELETED":
                        known.pop(_key(obj), None)
                        deleted(obj)
                    elif kind_of in ("ADDED", "MODIFIED"):
                        known[_key(obj)] = obj
                        changed(obj)


def _key(obj: Obj) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace", "")), str(m.get("name", ""))


async def run(args: argparse.Namespace) -> None:
    """`capstan nodes`: until SIGTERM or SIGINT. SystemExit with the reason for a kubeconfig that cannot be used."""
    import yaml

    from server.controllers.kubelets.simulator import Simulator  # loaded by the command that runs it

    try:
        config = Kubeconfig(args.kubeconfig)
    except (ValueError, KeyError, TypeError, yaml.YAMLError, ssl.SSLError) as err:
        raise SystemExit(f"capstan nodes: {args.kubeconfig}: {err}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    node_shape = NodeShape(cpu=args.node_cpu, memory=args.node_memory, pods=args.node_pods,
                           zones=tuple(args.node_zones), prefix=args.node_name_prefix)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            api = RestNodeApi(session, config)
            first = node_shape.name(args.first)
            impersonating = await api.may_impersonate(first)
            log.info("capstan nodes: %d nodes from %s against %s, writing as %s", args.count, first, config.server,
                     "system:node:<name>" if impersonating else "the kubeconfig's user")
            simulator = Simulator(api, args.count, shape=node_shape, timing=timing(args), first=args.first)
            for name in args.stop_heartbeat:
                simulator.stop_heartbeat(name)
            listed = [asyncio.Event(), asyncio.Event()]
            feeds = [loop.create_task(api.follow(NODES, simulator.node_changed, simulator.node_deleted, listed[0])),
                     loop.create_task(api.follow(PODS, simulator.pod_changed, simulator.pod_deleted, listed[1]))]
            try:
                async with asyncio.timeout(30):
                    await asyncio.gather(*(e.wait() for e in listed))
                await simulator.start()
                log.info("capstan nodes: %d nodes registered", args.count)
                await stop.wait()
            finally:
                await simulator.stop()
                await cancel_each(feeds)
    finally:
        config.close()
