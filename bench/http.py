"""How fast Capstan serves Kubernetes REST over HTTP, beside kmock and a bare aiohttp ceiling in the same run.

Every server runs in its own process and this process is the client. Each workload runs a few
rounds against every server in turn (the order rotates each round), so that a slow figure
reads as "the machine", "aiohttp", "Capstan" or "the gRPC hop" at a glance:

  capstan            `capstan serve --insecure --workers 1`: store, core and gateway in one process
                     (fsync on, as served), plain HTTP, no authentication
  capstan-secure     `capstan serve` as users run it: its secure default (a worker per usable core,
                     HTTPS with the certificates it generates in its data dir, RBAC, admission, limits;
                     fsync on; CPU is the whole process tree's); the client sends
                     a ServiceAccount token from TokenRequest (ServiceAccount `bench` in default, bound
                     to cluster-admin, its token asked for with the data dir's admin certificate)
  kube-apiserver     a real kube-apiserver binary (--kube-apiserver PATH, default $KUBE_APISERVER; else
                     not run and every figure n/a) over one etcd member of its own (fsync on), HTTPS
                     with its self-signed certificate, --authorization-mode Node,RBAC, the client
                     sending a static token (--token-auth-file) of a user in system:masters; timing
                     starts once /readyz answers 200. CPU is kube-apiserver's and etcd's, by process
  capstan-2workers   `capstan serve --workers 2`: two such processes sharing the port and the LMDB
                     environment under their parent; CPU is the whole process tree's
  capstan-scaleout   `capstan core` and two `capstan gateway --core` processes; the client spreads
                     requests and watchers over both gateways
  capstan-1gw-grpc   `capstan core` and one gateway: what the gRPC hop costs, and (beside
                     capstan-scaleout) what a second gateway process buys
  kmock              the kmock Kubernetes emulator (PyPI `kmock`), on a port through this file's
                     `--serve kmock`, as its pytest fixture runs it: a test double, for comparison
  ceiling            a bare aiohttp app in this file (`--serve ceiling`): ConfigMaps as JSON blobs in
                     a dict, resourceVersion from a counter, a queue per watcher; the most any
                     aiohttp app can do here

    python -m bench.http [--quick] [--only create,get,...] [--impls capstan,kmock,...]
    python -m bench.http --impls capstan,capstan-2workers --only create,get,update,watch   (1 vs 2 workers)
    python -m bench.http --impls capstan-secure,kube-apiserver --kube-apiserver PATH \
        --only create,get,update,list-json,list-protobuf,watch                                (beside kube)

The secure layouts (capstan-secure, kube-apiserver) are named in --impls, never run by default.

Workloads (full sizes; --quick shrinks them for a smoke run). The client is aiohttp with
HTTP/1.1 keep-alive, one ClientSession per server with a connector limit of 32, and 32
concurrent workers (for the secure layouts: TLS without verifying the server's certificate, an
`Authorization: Bearer` header on every request and watch); objects are 1 KiB ConfigMaps (10
data keys of ~100 bytes) in `default`:
  create         POST 5,000 ConfigMaps (200 to warm up, then 4 rounds of 1,200): creates/s.
  get            GETs of random ConfigMaps among the 5,000 (5 rounds of 4,000): gets/s.
  update         PUTs with the current resourceVersion (5 rounds of 1,500 distinct objects): updates/s.
  merge-patch    PATCH application/merge-patch+json changing one value (rounds as update): patches/s.
  apply          server-side apply (application/apply-patch+yaml, JSON body, fieldManager=bench,
                 force=true since the creator owns the data) of the whole ConfigMap with one value
                 changed (rounds as update): applies/s. The ceiling merges both kinds of PATCH
                 into the stored JSON; it keeps no field ownership.
  list-json      a LIST of all 5,000, one at a time, uncompressed (5 rounds of 2): ms until its last byte
                 is read. `gzip_ms` is one more a round asking for gzip, as client-go does (Capstan
                 compresses answers from 128 KiB on; the others never do); it includes inflating.
  list-protobuf  the same with `Accept: application/vnd.kubernetes.protobuf` (n/a to kmock and the ceiling).
  list-metadata  the same as client-go's metadata informers ask it: a PartialObjectMetadataList in protobuf
                 (`Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`;
                 n/a to kmock and the ceiling).
  crd            CustomResourceDefinitions (n/a to kmock and the ceiling). ms until served: a
                 new CRD each round (3 rounds), from its POST until a LIST of its resource answers 200
                 (polled every 5 ms). crd-create: POSTs of custom resources of a CRD whose schema has 20
                 typed, validated fields (200 to warm up, then 3 rounds of 1,200): creates/s.
  pods           LISTs of 5,000 Pods (~2.5 KiB specs: two containers with env, ports, probes,
                 resources and volume mounts, volumes, tolerations, affinity) in namespace
                 `pods`, ~6 KiB each as served with defaults and managedFields, made untimed first (Capstan
                 and kube-apiserver only): pods-list-json and pods-list-protobuf, ms per
                 uncompressed LIST to its last byte (5 rounds of 1).
  watch          50 watchers (`?watch=1&resourceVersion=<rv>`, on a session of their own) while one
                 create at a time is made (3 rounds of 40): each event's latency from the create's
                 response to each watcher reading it; p99 and p50 over all deliveries. One client loop
                 reads both, so an event read before the response counts as 0 ms
                 (`delivered_before_ack` says how many).

Each line carries the median over rounds and the spread, the servers' CPU per request (from
/proc, by process for the multi-process layouts) and the share of a core the client used (near
1.0: the figure is the client's limit, not the server's).

A round takes no new requests after its time budget. kmock needs that: it logs every request
and matches each new one against the whole log, so it slows with every request it serves.
Objects a budget left uncreated are made untimed before the other workloads, over HTTP, or for
kmock through its Python API (`objects[...] = ...`, its documented way to preload state).

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr. A figure
that does not apply is `null`, with `"ok": null` and `"na"` saying why; an operation a server
cannot do is `"ok": false` with `"error"`. Exit status 1 means a Capstan layout, kube-apiserver
or the ceiling failed a workload or answered wrongly (kmock's failures are data); a missed goal is
only `"ok": false`; kube-apiserver, kmock and the ceiling are held to no goal (their `"ok"` says
they answered right). Data dirs live in a temporary directory; every server is stopped (SIGTERM,
then SIGKILL) and the directory removed at the end, on error too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import shutil
import socket
import ssl
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from bench._processes import START_TIMEOUT, Child, Children, free_port, start_etcd
from bench._util import Goal, at_least, at_most, check_choices, emit, exit_on_sigterm, note
from capstan.api.meta.v1 import meta_pb2
from capstan.cli.workers import default_workers
from gateway.codecs import protobuf as protobuf_codec

IMPLS = ("capstan", "capstan-2workers", "capstan-secure", "capstan-scaleout", "capstan-1gw-grpc", "kube-apiserver",
         "kmock", "ceiling")
# --impls names the others: workers compared, and the secure layouts beside kube-apiserver.
DEFAULT_IMPLS = tuple(impl for impl in IMPLS if impl not in ("capstan-2workers", "capstan-secure", "kube-apiserver"))
OPS = ("create", "get", "update", "merge-patch", "apply", "list-json", "list-protobuf", "list-metadata", "crd", "pods",
       "watch")

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DATA = {f"key-{i:02}": f"{i:02}" * 48 for i in range(10)}  # 10 keys of ~100 bytes, as bench.core: ~1 KiB
JSON = {"Content-Type": "application/json"}
PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_MAGIC = b"k8s\x00"  # every Kubernetes protobuf envelope starts so
METADATA = f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

GOALS = {
    "create": at_least(1_500, "/s"), "get": at_least(3_000, "/s"), "update": at_least(1_500, "/s"),
    "merge-patch": at_least(1_000, "/s"), "apply": at_least(1_000, "/s"),
    "list-json": at_most(120, " ms"), "list-protobuf": at_most(60, " ms"), "list-metadata": at_most(60, " ms"),
    "watch": at_most(15, " ms"),
    "crd": at_most(1_000, " ms"), "crd-create": at_least(1_000, "/s"),
    "pods-list-json": at_most(300, " ms"), "pods-list-protobuf": at_most(150, " ms"),
}
# kube-apiserver, kmock and the ceiling are context, not held to Capstan's goals: their "ok" only says they
# answered right.
CONTEXT_GOALS = {impl: Goal(text, 0.0, lambda figure, bound: True)
                 for impl, text in (("kube-apiserver", "(kube-apiserver)"), ("kmock", "(peer)"),
                                    ("ceiling", "(ceiling)"))}
# What kube-apiserver needs to start beside the flags naming files and ports: any range will do, nothing
# is allocated from it here.
KUBE_SERVICE_CIDR = "10.0.0.0/24"
KUBE_ISSUER = "https://kubernetes.default.svc.cluster.local"
KUBE_READY_TIMEOUT = 90.0  # seconds from its start until /readyz answers 200 (slower than START_TIMEOUT allows)
RBAC = "rbac.authorization.k8s.io"

LISTENING = {
    "serve": re.compile(r"capstan serving: HTTP (http://\S+)"),
    "serve-secure": re.compile(r"capstan serving: HTTPS (https://\S+)"),
    "core": re.compile(r"capstan core serving: gRPC (\S+)"),
    "gateway": re.compile(r"capstan gateway serving: HTTP (http://\S+)"),
    "kmock": re.compile(r"bench server listening: (http://\S+)"),
    "ceiling": re.compile(r"bench server listening: (http://\S+)"),
}
REQUEST_TIMEOUT = 120.0  # seconds any one request may take (kmock's grow with every request it served)
DELIVERY_TIMEOUT = 10.0  # seconds one watch event may take to reach every watcher


@dataclass(frozen=True, slots=True)
class Sizes:
    objects: int  # ConfigMaps in `default` once the create workload is done: what get/update/list use
    warmup_creates: int
    create_rounds: int  # of (objects - warmup_creates) // create_rounds creates
    gets: int  # per round, as are the counts below
    get_rounds: int
    updates: int
    update_rounds: int
    lists: int  # uncompressed, per round and encoding (and one asking for gzip)
    list_rounds: int
    watchers: int
    watch_writes: int
    watch_rounds: int
    round_budget: float  # seconds after which a round takes no new requests
    catch_up: float  # seconds the watchers have to read what their watch replays, before timing starts
    workers: int = 32
    crd_rounds: int = 3  # CRDs installed, each timed until served
    crd_warmup_creates: int = 200
    crd_creates: int = 1_200  # custom resources per round, crd_rounds rounds


FULL = Sizes(objects=5_000, warmup_creates=200, create_rounds=4, gets=4_000, get_rounds=5, updates=1_500,
             update_rounds=5, lists=2, list_rounds=5, watchers=50, watch_writes=40, watch_rounds=3,
             round_budget=4.0, catch_up=60.0)
QUICK = Sizes(objects=120, warmup_creates=20, create_rounds=2, gets=120, get_rounds=2, updates=60,
              update_rounds=2, lists=1, list_rounds=2, watchers=10, watch_writes=5, watch_rounds=2,
              round_budget=0.25, catch_up=10.0, crd_rounds=2, crd_warmup_creates=20, crd_creates=120)


def config_map(name: str, *, resource_version: str = "", stamp: int = 0) -> bytes:
    """A ~1 KiB ConfigMap; a `stamp` changes one value (same size), so that an update changes something.

    The namespace is in the body as well as the URL, as kubectl sends a manifest's: kmock matches
    live watch events by the body's namespace, so objects posted without one never reach a
    namespaced watch there."""
    metadata = {"name": name, "namespace": "default"}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    data = {**DATA, "key-00": f"{stamp:096}"} if stamp else DATA
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})


def object_name(i: int) -> str:
    return f"cm-{i:06}"


# -- the servers under test --------------------------------------------------------------------------------------------


@dataclass
class Target:
    """One server layout as the client sees it, and what the client knows of its objects."""

    impl: str
    processes: list[Child] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)  # HTTP base URLs: request i goes to bases[i % len]
    protobuf: bool = True
    watch_query: str = "watch=1"
    created_status: int = 201
    control: Child | None = None  # kmock's runner: takes objects to preload on stdin
    error: str = ""  # why it is not running, if it is not
    session: aiohttp.ClientSession | None = None
    created: set[int] = field(default_factory=set)  # object indexes
    versions: dict[str, str] = field(default_factory=dict)  # name -> resourceVersion, for updates
    requests: int = 0  # sent so far: kmock's cost per request grows with it
    served_before: int = 0  # requests sent before the current workload began
    wrong: list[str] = field(default_factory=list)  # workloads that failed or answered wrongly
    headers: dict[str, str] = field(default_factory=dict)  # sent with every request: the bearer token, if any
    cert_dir: Path | None = None  # capstan-secure's generated certificates: the admin's credentials to set up with
    absent: bool = False  # not run at all (no binary): every figure n/a, `error` saying why

    def url(self, i: int, path: str = CONFIGMAPS) -> str:
        return self.bases[i % len(self.bases)] + path

    def open_session(self, limit: int, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
        """A client session to this server: up to `limit` keep-alive connections, TLS without verifying the
        server's certificate, this target's headers on every request."""
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit, ssl=False), timeout=timeout,
                                     headers=self.headers)

    @property
    def http(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session

    def begin(self) -> None:
        self.served_before = self.requests

    def cpu_seconds(self) -> dict[str, float]:
        """CPU spent so far by role (gateways summed)."""
        by_role: dict[str, float] = {}
        for child in self.processes:
            by_role[child.role] = by_role.get(child.role, 0.0) + child.cpu_seconds()
        return by_role

    def goal(self, op: str) -> Goal:
        return CONTEXT_GOALS.get(self.impl, GOALS[op])

    def emit(self, op: str, metric: str, figure: float, *, correct: bool, **context: Any) -> None:
        if self.absent:
            self.emit_na(op, metric, self.error)
            return
        if not correct:
            self.wrong.append(op)
        if self.impl == "kmock":
            context["requests_served_before"] = self.served_before
        emit(op, self.impl, metric, figure, self.goal(op), correct=correct, **context)

    def emit_na(self, op: str, metric: str, reason: str) -> None:
        """A figure that does not apply to this server: null, neither met nor missed."""
        print(json.dumps({"op": op, "impl": self.impl, "metric": metric, metric: None, "goal": self.goal(op).text,
                          "ok": None, "na": reason}), flush=True)


def start_targets(children: Children, root: Path, impls: Sequence[str], kube_apiserver: str) -> list[Target]:
    """Start every layout's first process at once, then wait for each to listen (gateways once their core does)."""
    capstan = ("-m", "capstan")
    targets = []
    for impl in impls:
        target = Target(impl)
        if impl == "kube-apiserver":
            start_kube(children, root / impl, target, kube_apiserver)
            targets.append(target)
            continue
        if impl == "capstan-secure":  # the secure default: only where its files and ports go is said
            target.cert_dir = root / impl / "pki"
            target.processes = [children.start("serve", *capstan, "serve", "--data-dir", str(root / impl),
                                               "--secure-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "0")]
        elif impl in ("capstan", "capstan-2workers"):
            workers = ("--workers", "2") if impl == "capstan-2workers" else ("--workers", "1")
            target.processes = [children.start("serve", *capstan, "serve", "--insecure", "--data-dir",
                                               str(root / impl), "--http-port", "0", "--grpc-port", "0", *workers)]
        elif impl.startswith("capstan-"):
            target.processes = [children.start("core", *capstan, "core", "--insecure", "--data-dir",
                                               str(root / impl), "--grpc-port", "0")]
        else:  # served by this file in a process of its own; stdin open until the end (kmock reads it)
            target.control = children.start(impl, "-m", "bench.http", "--serve", impl, control=True)
            target.processes = [target.control]
            target.protobuf = False
        if impl == "kmock":
            target.created_status = 200  # kmock answers a create with 200, not 201
            target.watch_query = "watch=true"  # kmock takes only watch=true for a watch: watch=1 is a list to it
        targets.append(target)
    for target in targets:
        if target.impl == "kube-apiserver":
            continue  # its address is known; it is waited for by `prepare`
        first = target.processes[0]
        try:
            address = first.listening(LISTENING["serve-secure" if target.cert_dir else first.role])
            if first.role == "core":
                gateways = 2 if target.impl == "capstan-scaleout" else 1
                target.processes += [children.start("gateway", *capstan, "gateway", "--insecure", "--core",
                                                    address, "--http-port", "0") for _ in range(gateways)]
                target.bases = [gateway.listening(LISTENING["gateway"]) for gateway in target.processes[1:]]
            else:
                target.bases = [address]
                last = {"capstan-2workers": 1, "capstan-secure": default_workers() - 1}.get(target.impl, 0)
                if last:  # each worker serves once the one before does
                    first.listening(re.compile(rf"capstan serving: .* worker ({last}) pid"))
        except RuntimeError as err:
            target.error = str(err)
            note(f"{target.impl}: not running: {err}")
            continue
        note(f"{target.impl}: {' '.join(target.bases)}; pids "
             + " ".join(f"{child.role}={child.proc.pid}" for child in target.processes))
    return targets


def start_kube(children: Children, root: Path, target: Target, binary: str) -> None:
    """etcd and the kube-apiserver `binary` over it, flags as a minimal cluster needs them; `target.absent`
    (and why) when there is no binary to run, `target.error` when etcd does not come up."""
    if not binary or not os.access(binary, os.X_OK):
        target.absent = True
        target.error = (f"no kube-apiserver binary at {binary!r}" if binary else
                        "no kube-apiserver binary: pass --kube-apiserver PATH or set $KUBE_APISERVER")
        note(f"kube-apiserver: not run: {target.error}")
        return
    root.mkdir(parents=True)
    try:
        members, urls = start_etcd(children, root, "kube-etcd", 1)
    except RuntimeError as err:
        target.error = str(err)
        note(f"kube-apiserver: not running: {err}")
        return
    token = secrets.token_hex(16)
    (root / "tokens.csv").write_text(f'{token},bench-admin,bench-admin,"system:masters"\n')
    write_service_account_key(root / "sa.key", root / "sa.pub")
    port = free_port()
    server = children.start(
        "kube-apiserver", f"--etcd-servers={urls[0]}", f"--secure-port={port}", "--bind-address=127.0.0.1",
        f"--cert-dir={root / 'certs'}", f"--token-auth-file={root / 'tokens.csv'}", "--authorization-mode=Node,RBAC",
        f"--service-account-issuer={KUBE_ISSUER}", f"--service-account-key-file={root / 'sa.pub'}",
        f"--service-account-signing-key-file={root / 'sa.key'}", f"--service-cluster-ip-range={KUBE_SERVICE_CIDR}",
        program=binary)
    target.processes = [server, *members]
    target.bases = [f"https://127.0.0.1:{port}"]
    target.headers = {"Authorization": f"Bearer {token}"}


def write_service_account_key(private: Path, public: Path) -> None:
    """An RSA key pair for kube-apiserver to sign and verify ServiceAccount tokens with (PEM files)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))


async def prepare(target: Target) -> None:
    """What a secure layout needs before its first timed request: kube-apiserver ready (/readyz 200 with its
    token); capstan-secure's ServiceAccount `bench` bound to cluster-admin and a token for it from TokenRequest,
    asked for with the admin certificate of its data dir, and that token able to list. RuntimeError if not."""
    if target.impl == "kube-apiserver":
        await until_answers(target, "/readyz", KUBE_READY_TIMEOUT)
        note(f"{target.impl}: {target.bases[0]}; pids "
             + " ".join(f"{child.role}={child.proc.pid}" for child in target.processes))
    elif target.cert_dir is not None:
        admin = ssl.create_default_context(cafile=target.cert_dir / "ca.crt")
        admin.load_cert_chain(target.cert_dir / "admin.crt", target.cert_dir / "admin.key")
        account = {"metadata": {"name": "bench", "namespace": "default"}}
        binding = {"metadata": {"name": "bench-cluster-admin"},
                   "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
                   "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": "default"}]}
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600}}
        steps = (("/api/v1/namespaces/default/serviceaccounts", account),
                 (f"/apis/{RBAC}/v1/clusterrolebindings", binding),
                 ("/api/v1/namespaces/default/serviceaccounts/bench/token", request))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=admin)) as session:
            for path, body in steps:
                async with session.post(target.url(0, path), data=orjson.dumps(body), headers=JSON) as response:
                    if response.status != 201:
                        raise RuntimeError(await failure(response, f"{target.impl}: POST {path}"))
                    answer = orjson.loads(await response.read())
        target.headers = {"Authorization": f"Bearer {answer['status']['token']}"}
        await until_answers(target, CONFIGMAPS + "?limit=1", START_TIMEOUT)


async def until_answers(target: Target, path: str, timeout: float) -> None:
    """GET `path` with the target's headers every 50 ms until it answers 200; RuntimeError after `timeout` s."""
    deadline = time.monotonic() + timeout
    async with target.open_session(1, aiohttp.ClientTimeout(total=5)) as session:
        while True:
            error = ""
            try:
                async with session.get(target.url(0, path)) as response:
                    if response.status == 200:
                        return
                    error = await failure(response, f"GET {path}")
            except (aiohttp.ClientError, TimeoutError) as err:
                error = f"GET {path}: {type(err).__name__}: {err}"
            if time.monotonic() > deadline or any(c.proc.poll() is not None for c in target.processes):
                raise RuntimeError(f"{target.impl} not ready: {error}; its log: "
                                   + target.processes[0].log.read_text(errors="replace")[-2_000:])
            await asyncio.sleep(0.05)


# -- rounds and figures ------------------------------------------------------------------------------------------------


@dataclass
class Rounds:
    """One workload's rounds against one target: the figure of each, and what they cost."""

    figures: list[float] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    server_cpu: dict[str, float] = field(default_factory=dict)
    client_cpu: float = 0.0
    failures: int = 0
    first_error: str = ""
    stopped: bool = False  # a round in which nothing succeeded: no more rounds

    def fail(self, error: str) -> None:
        self.failures += 1
        self.first_error = self.first_error or error

    def context(self) -> dict[str, Any]:
        requests = max(self.requests, 1)
        cpu_us = {role: round(seconds / requests * 1e6) for role, seconds in self.server_cpu.items()}
        context: dict[str, Any] = {"server_cpu_us_per_req": sum(cpu_us.values())}
        if len(cpu_us) > 1:
            context["cpu_us_per_req_by_process"] = cpu_us
        context["client_cpu_share"] = round(self.client_cpu / self.seconds, 2) if self.seconds else 0.0
        if self.failures:
            context |= {"failures": self.failures, "error": self.first_error}
        return context


class Meter:
    """Wall time, the client's CPU and the servers' CPU around one round."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.server = target.cpu_seconds()
        self.client = time.process_time()
        self.wall = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.wall

    def stop(self, rounds: Rounds, requests: int) -> float:
        """Add this round's costs to `rounds`; its seconds."""
        seconds = self.seconds()
        rounds.seconds += seconds
        rounds.client_cpu += time.process_time() - self.client
        for role, spent in self.target.cpu_seconds().items():
            rounds.server_cpu[role] = rounds.server_cpu.get(role, 0.0) + spent - self.server.get(role, 0.0)
        rounds.requests += requests
        return seconds


def rotations(targets: Sequence[Target], count: int) -> Iterator[tuple[int, Target]]:
    """(round, target) for `count` rounds over the running targets, starting one later each round."""
    live = [t for t in targets if not t.error]
    for r in range(count):
        for k in range(len(live)):
            yield r, live[(r + k) % len(live)]


def emit_rates(op: str, metric: str, targets: Sequence[Target], results: dict[str, Rounds], **context: Any) -> None:
    for target in targets:
        if target.error:
            target.emit(op, metric, 0.0, correct=False, error=target.error)
            continue
        rounds = results[target.impl]
        figures = rounds.figures or [0.0]
        target.emit(op, metric, statistics.median(figures), correct=not rounds.failures,
                    worst_per_s=round(min(figures)), best_per_s=round(max(figures)),
                    rounds=[round(f) for f in figures], count=rounds.requests, **context, **rounds.context())


async def failure(response: aiohttp.ClientResponse, what: str) -> str:
    """'<what> answered <code>: <reason>: <message>', from the Kubernetes Status in the body if there is one."""
    body = await response.read()
    try:
        status = orjson.loads(body)
        detail = f"{status.get('reason', '')}: {status.get('message', '')}"
    except (orjson.JSONDecodeError, AttributeError):
        detail = body[:200].decode(errors="replace")
    return f"{what} answered {response.status}: {detail[:300]}"


Job = Callable[[int], Awaitable[str | None]]  # request i; None, or what went wrong


async def run_for(count: int, workers: int, budget: float, job: Job, rounds: Rounds) -> int:
    """job(0) .. job(count - 1) on `workers` coroutines until all ran or `budget` seconds passed; jobs run.

    A job that raises a client error counts as failed too."""
    indexes = iter(range(count))
    deadline = time.perf_counter() + budget
    ran = 0

    async def worker() -> None:
        nonlocal ran
        for i in indexes:  # shared iterator: each index goes to exactly one worker
            try:
                error = await job(i)
            except (aiohttp.ClientError, TimeoutError) as err:
                error = f"{type(err).__name__}: {err}"
            ran += 1
            if error:
                rounds.fail(error)
            if time.perf_counter() > deadline:
                return

    await asyncio.gather(*(worker() for _ in range(min(workers, count))))
    return ran


async def rate_round(target: Target, rounds: Rounds, count: int, sizes: Sizes, job: Job) -> None:
    """One round of `count` requests (or fewer, if the budget ran out): successes per second."""
    failures = rounds.failures
    meter = Meter(target)
    ran = await run_for(count, sizes.workers, sizes.round_budget, job, rounds)
    seconds = meter.stop(rounds, ran)
    target.requests += ran
    failed = rounds.failures - failures
    rounds.figures.append((ran - failed) / seconds)
    if failed == ran:
        rounds.stopped = True  # the server cannot do this at all: once is enough to say so


# -- create: the population the other workloads use --------------------------------------------------------------------


def create_job(target: Target, first: int = 0) -> Job:
    """Job i creates object first + i."""

    async def create(i: int) -> str | None:
        index = first + i
        async with target.http.post(target.url(index), data=config_map(object_name(index)), headers=JSON) as response:
            if response.status != target.created_status:
                return await failure(response, "POST")
            await response.read()
        target.created.add(index)
        return None

    return create


async def bench_create(targets: Sequence[Target], sizes: Sizes, *, measure: bool) -> None:
    """Create the population, measured as the create workload if asked for; then fill in what is missing."""
    live = [t for t in targets if not t.error]
    if measure:
        per_round = (sizes.objects - sizes.warmup_creates) // sizes.create_rounds
        results = {t.impl: Rounds() for t in targets}
        for target in live:
            target.begin()
            await rate_round(target, Rounds(), sizes.warmup_creates, sizes, create_job(target))
        for r, target in rotations(targets, sizes.create_rounds):
            if not results[target.impl].stopped:
                first = sizes.warmup_creates + r * per_round
                await rate_round(target, results[target.impl], per_round, sizes, create_job(target, first))
        emit_rates("create", "creates_per_s", targets, results, workers=sizes.workers,
                   object_bytes=len(config_map(object_name(0))), warmup=sizes.warmup_creates)
    for target in live:
        await fill(target, sizes)


async def fill(target: Target, sizes: Sizes) -> None:
    """Create, untimed, whatever of the population is missing (for kmock, through its Python API)."""
    missing = [i for i in range(sizes.objects) if i not in target.created]
    if not missing:
        return
    note(f"{target.impl}: filling in {len(missing)} of {sizes.objects} ConfigMaps untimed")
    if target.control is not None and target.impl == "kmock":
        await preload(target.control, missing)
    else:
        rounds, job = Rounds(), create_job(target)
        await run_for(len(missing), sizes.workers, float("inf"), lambda k: job(missing[k]), rounds)
        target.requests += len(missing)
        if rounds.failures:
            raise RuntimeError(f"{target.impl}: filling in ConfigMaps failed: {rounds.first_error}")
    target.created.update(missing)


async def preload(runner: Child, indexes: Sequence[int]) -> None:
    """Hand kmock's runner the objects to store, as a JSON file named on its stdin; it answers the count."""
    stdin, stdout = runner.proc.stdin, runner.proc.stdout
    assert stdin is not None and stdout is not None
    path = runner.log.with_suffix(".preload.json")
    path.write_bytes(b"[" + b",".join(config_map(object_name(i)) for i in indexes) + b"]")

    def exchange() -> bytes:
        stdin.write(str(path).encode() + b"\n")
        stdin.flush()
        return stdout.readline()

    answer = await asyncio.to_thread(exchange)
    if answer.strip() != str(len(indexes)).encode():
        raise RuntimeError(f"kmock's runner answered {answer!r} to preloading {len(indexes)} objects")


# -- get, update -------------------------------------------------------------------------------------------------------


async def bench_get(targets: Sequence[Target], sizes: Sizes) -> None:
    rng = random.Random(1)
    paths = [f"{CONFIGMAPS}/{object_name(rng.randrange(sizes.objects))}" for _ in range(sizes.gets)]
    results = {t.impl: Rounds() for t in targets}

    def job(target: Target) -> Job:
        async def get(i: int) -> str | None:
            async with target.http.get(target.url(i, paths[i])) as response:
                if response.status != 200:
                    return await failure(response, "GET")
                await response.read()
            return None

        return get

    for target in targets:
        target.begin()
    for _, target in rotations(targets, sizes.get_rounds):
        if not results[target.impl].stopped:
            await rate_round(target, results[target.impl], sizes.gets, sizes, job(target))
    emit_rates("get", "gets_per_s", targets, results, workers=sizes.workers, objects=sizes.objects)


async def current_versions(target: Target) -> dict[str, str]:
    """name -> resourceVersion of every ConfigMap in `default`, from one LIST ("" where the server keeps none)."""
    target.requests += 1
    async with target.http.get(target.url(0)) as response:
        if response.status != 200:
            raise RuntimeError(await failure(response, "LIST"))
        listed = orjson.loads(await response.read())
    return {item["metadata"]["name"]: str(item["metadata"].get("resourceVersion", "")) for item in listed["items"]}


async def bench_update(targets: Sequence[Target], sizes: Sizes) -> None:
    results = {t.impl: Rounds() for t in targets}
    per_round = min(sizes.updates, sizes.objects)  # distinct objects within a round: no self-inflicted conflicts

    def job(target: Target, r: int) -> Job:
        async def update(i: int) -> str | None:
            n = r * per_round + i
            name = object_name(n % sizes.objects)
            body = config_map(name, resource_version=target.versions.get(name, ""), stamp=n + 1)
            async with target.http.put(target.url(i, f"{CONFIGMAPS}/{name}"), data=body, headers=JSON) as response:
                if response.status != 200:
                    return await failure(response, "PUT")
                updated = orjson.loads(await response.read())
            target.versions[name] = str(updated["metadata"].get("resourceVersion", ""))
            return None

        return update

    for target in (t for t in targets if not t.error):
        target.begin()
        try:
            target.versions = await current_versions(target)
        except (aiohttp.ClientError, TimeoutError, RuntimeError) as err:
            results[target.impl].fail(f"listing resourceVersions: {err}")
            results[target.impl].stopped = True
    for r, target in rotations(targets, sizes.update_rounds):
        if not results[target.impl].stopped:
            await rate_round(target, results[target.impl], per_round, sizes, job(target, r))
    emit_rates("update", "updates_per_s", targets, results, workers=sizes.workers, objects=sizes.objects)


def patch_workload(op: str, content_type: str, query: str) -> Callable[[Sequence[Target], Sizes], Awaitable[None]]:
    """A PATCH workload: each round patches distinct objects, changing one value of each."""
    headers = {"Content-Type": content_type}

    async def bench(targets: Sequence[Target], sizes: Sizes) -> None:
        results = {t.impl: Rounds() for t in targets}
        per_round = min(sizes.updates, sizes.objects)

        def job(target: Target, r: int) -> Job:
            async def patch(i: int) -> str | None:
                n = r * per_round + i
                name = object_name(n % sizes.objects)
                stamp = f"{n + 10_000_000:096}"
                if op == "apply":
                    body = config_map(name, stamp=n + 10_000_000)
                else:
                    body = orjson.dumps({"data": {"key-00": stamp}})
                url = target.url(i, f"{CONFIGMAPS}/{name}") + query
                async with target.http.patch(url, data=body, headers=headers) as response:
                    if response.status != 200:
                        return await failure(response, "PATCH")
                    patched = orjson.loads(await response.read())
                if patched.get("data", {}).get("key-00") != stamp:
                    return "PATCH answered without the change"
                return None

            return patch

        for r, target in rotations(targets, sizes.update_rounds):
            if not target.error:
                await rate_round(target, results[target.impl], per_round, sizes, job(target, r))
        emit_rates(op, "patches_per_s", targets, results, workers=sizes.workers, objects=sizes.objects)

    return bench


bench_merge_patch = patch_workload("merge-patch", "application/merge-patch+json", "")
bench_apply = patch_workload("apply", "application/apply-patch+yaml", "?fieldManager=bench&force=true")


# -- list --------------------------------------------------------------------------------------------------------------


async def bench_list(targets: Sequence[Target], sizes: Sizes, *, protobuf: bool, any_version: bool = False,
                     metadata: bool = False) -> None:
    """Whole LISTs one at a time, uncompressed (the headline) and, once a round, asking for gzip as client-go does.
    any_version: with resourceVersion=0 (the op gains "-rv0"), which kube-apiserver answers from its watch cache.
    metadata: a protobuf PartialObjectMetadataList ("list-metadata")."""
    op = ("list-metadata" if metadata else "list-protobuf" if protobuf else "list-json") + (
        "-rv0" if any_version else "")
    query = "?resourceVersion=0" if any_version else ""
    accept = METADATA if metadata else PROTOBUF if protobuf else "application/json"
    plain, gzip = {"Accept": accept, "Accept-Encoding": "identity"}, {"Accept": accept, "Accept-Encoding": "gzip"}
    samples: dict[str, dict[str, list[float]]] = {t.impl: {"identity": [], "gzip": []} for t in targets}
    results = {t.impl: Rounds() for t in targets}
    answered: dict[str, dict[str, Any]] = {t.impl: {} for t in targets}
    live = [t for t in targets if not t.error and (t.protobuf or not protobuf)]
    for target in live:
        target.begin()
        for headers in (plain, gzip):  # warm-up: the first use of these code paths
            await one_list(target, headers, Rounds(), query)
    for _, target in rotations(live, sizes.list_rounds):
        rounds = results[target.impl]
        deadline = time.perf_counter() + sizes.round_budget
        for headers in [plain] * sizes.lists + [gzip]:
            if rounds.stopped or time.perf_counter() > deadline:
                break
            meter = Meter(target)
            got = await one_list(target, headers, rounds, query)
            seconds = meter.stop(rounds, 1) if headers is plain else meter.seconds()  # CPU: headline lists only
            wrong = list_wrong(got[0], protobuf, sizes, metadata) if got is not None else ""
            if got is None or wrong:
                if wrong:
                    rounds.fail(wrong)
                rounds.stopped = True
                break
            _, wire_bytes, compressed = got
            samples[target.impl][headers["Accept-Encoding"]].append(seconds * 1e3)
            if headers is plain:
                answered[target.impl]["body_bytes"] = wire_bytes
            else:
                answered[target.impl]["gzip_bytes"] = wire_bytes if compressed else None  # None: not compressed
    for target in targets:
        if target.error:
            target.emit(op, "ms_per_list", 0.0, correct=False, error=target.error)
        elif protobuf and not target.protobuf:
            target.emit_na(op, "ms_per_list", "serves JSON only")
        else:
            ms, gzip_ms = samples[target.impl]["identity"] or [0.0], samples[target.impl]["gzip"] or [0.0]
            target.emit(op, "ms_per_list", statistics.median(ms),
                        correct=not results[target.impl].failures and bool(samples[target.impl]["identity"]),
                        min_ms=round(min(ms), 3), max_ms=round(max(ms), 3),
                        lists=len(samples[target.impl]["identity"]), objects=sizes.objects,
                        gzip_ms=round(statistics.median(gzip_ms), 3), **answered[target.impl],
                        **results[target.impl].context())


async def one_list(target: Target, headers: dict[str, str], rounds: Rounds,
                   query: str = "") -> tuple[bytes, int, bool] | None:
    """One whole LIST read to its last byte (decompressed): (body, bytes on the wire, compressed?), or None
    (and a failure noted) if it was not answered."""
    target.requests += 1
    try:
        async with target.http.get(target.url(target.requests, CONFIGMAPS + query), headers=headers) as response:
            if response.status != 200:
                rounds.fail(await failure(response, "LIST"))
                return None
            body = await response.read()
            compressed = response.headers.get("Content-Encoding", "") == "gzip"
            return body, int(response.headers.get("Content-Length", len(body))), compressed
    except (aiohttp.ClientError, TimeoutError) as err:
        rounds.fail(f"LIST: {type(err).__name__}: {err}")
        return None


def list_wrong(body: bytes, protobuf: bool, sizes: Sizes, metadata: bool = False) -> str:
    """What is wrong with a LIST's body, "" if nothing: checked after the clock stopped."""
    if metadata and body.startswith(PROTOBUF_MAGIC):
        _, kind, raw = protobuf_codec.decode_envelope(body)
        items = len(meta_pb2.PartialObjectMetadataList.FromString(raw).items)
        if kind != "PartialObjectMetadataList" or items < sizes.objects:
            return f"LIST answered a {kind} of {items} items, not a PartialObjectMetadataList of {sizes.objects}"
        return ""
    if protobuf:
        return "" if body.startswith(PROTOBUF_MAGIC) else f"LIST answered {body[:40]!r}, not a protobuf envelope"
    items = len(orjson.loads(body)["items"])
    return "" if items >= sizes.objects else f"LIST answered {items} of at least {sizes.objects} ConfigMaps"


# -- watch -------------------------------------------------------------------------------------------------------------


class Deliveries:
    """When each watcher read the event of the one write in flight."""

    def __init__(self, watchers: int) -> None:
        self.watchers = watchers
        self.name = ""
        self.times: dict[int, float] = {}
        self.everyone = asyncio.Event()

    def expect(self, name: str) -> None:
        self.name, self.times = name, {}
        self.everyone.clear()

    def read(self, watcher: int, name: str, at: float) -> None:
        if name == self.name and watcher not in self.times:
            self.times[watcher] = at
            if len(self.times) == self.watchers:
                self.everyone.set()


async def watcher(session: aiohttp.ClientSession, url: str, index: int, deliveries: Deliveries,
                  started: asyncio.Queue[str]) -> None:
    """One watch stream: "" on `started` once its headers are in (else what went wrong), then every event read."""
    async with session.get(url) as response:
        if response.status != 200:
            await started.put(await failure(response, "WATCH"))
            return
        await started.put("")
        while line := await response.content.readline():
            at = time.perf_counter()
            try:
                name = orjson.loads(line)["object"]["metadata"]["name"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                continue  # not an object's event (kmock starts with an empty line)
            deliveries.read(index, name, at)
    await started.put("the watch ended")


async def write_and_wait(target: Target, name: str, deliveries: Deliveries, rounds: Rounds, timeout: float
                         ) -> float | None:
    """Create `name` and wait until every watcher has read its event; when the create's response was read."""
    deliveries.expect(name)
    target.requests += 1
    async with target.http.post(target.url(target.requests), data=config_map(name), headers=JSON) as response:
        await response.read()
        acked = time.perf_counter()
        if response.status != target.created_status:
            rounds.fail(await failure(response, "POST"))
            return None
    try:
        await asyncio.wait_for(deliveries.everyone.wait(), timeout)
    except TimeoutError:
        rounds.fail(f"{name} reached {len(deliveries.times)} of {deliveries.watchers} watchers in {timeout:g} s")
        return None
    return acked


async def watch_rounds(target: Target, sizes: Sizes, rounds: Rounds, latencies: list[list[float]]) -> dict[str, Any]:
    """Every round of the watch workload against one target, the same watchers throughout; context figures."""
    async with target.http.get(target.url(0, CONFIGMAPS + "?limit=1")) as response:
        rv = orjson.loads(await response.read())["metadata"]["resourceVersion"]
    query = f"?{target.watch_query}&resourceVersion={rv}"
    deliveries = Deliveries(sizes.watchers)
    started: asyncio.Queue[str] = asyncio.Queue()
    streams = target.open_session(sizes.watchers, aiohttp.ClientTimeout(total=None, sock_read=None))
    tasks = [asyncio.create_task(watcher(streams, target.url(j, CONFIGMAPS + query), j, deliveries, started))
             for j in range(sizes.watchers)]
    target.requests += 1 + sizes.watchers
    writes = before_ack = 0
    try:
        for _ in range(sizes.watchers):
            error = await asyncio.wait_for(started.get(), sizes.catch_up)
            if error:
                rounds.fail(error)
                return {}
        # A first write every watcher must read before timing starts: it comes after whatever the
        # watch replays (kmock replays every object as ADDED, whatever the resourceVersion).
        if await write_and_wait(target, f"w-warmup-{target.impl}", deliveries, rounds, sizes.catch_up) is None:
            return {}
        for r in range(sizes.watch_rounds):
            meter = Meter(target)
            ms: list[float] = []
            deadline = time.perf_counter() + sizes.round_budget
            for i in range(sizes.watch_writes):
                acked = await write_and_wait(target, f"w-{r}-{i:04}", deliveries, rounds, DELIVERY_TIMEOUT)
                if acked is None:
                    return {}
                writes += 1
                # One client loop reads the create's response and the watch streams, in whatever order
                # the sockets became readable: an event read first counts as 0 ms.
                before_ack += sum(1 for at in deliveries.times.values() if at < acked)
                ms += [max(0.0, at - acked) * 1e3 for at in deliveries.times.values()]
                if time.perf_counter() > deadline:
                    break
            meter.stop(rounds, len(ms) // sizes.watchers)
            latencies.append(sorted(ms))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await streams.close()
    return {"writes": writes, "delivered_before_ack": before_ack}


def percentile(ordered: Sequence[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


async def bench_watch(targets: Sequence[Target], sizes: Sizes) -> None:
    results = {t.impl: Rounds() for t in targets}
    latencies: dict[str, list[list[float]]] = {t.impl: [] for t in targets}
    context: dict[str, dict[str, Any]] = {}
    for target in (t for t in targets if not t.error):  # one target at a time: its watchers stay for all rounds
        target.begin()
        try:
            context[target.impl] = await watch_rounds(target, sizes, results[target.impl], latencies[target.impl])
        except (aiohttp.ClientError, TimeoutError, KeyError) as err:
            results[target.impl].fail(f"{type(err).__name__}: {err}")
    for target in targets:
        if target.error:
            target.emit("watch", "p99_ms", 0.0, correct=False, error=target.error)
            continue
        p99s = [percentile(ms, 0.99) for ms in latencies[target.impl]] or [0.0]
        p50s = [percentile(ms, 0.5) for ms in latencies[target.impl]] or [0.0]
        target.emit("watch", "p99_ms", statistics.median(p99s),
                    correct=not results[target.impl].failures and bool(latencies[target.impl]),
                    p50_ms=round(statistics.median(p50s), 3), min_p99_ms=round(min(p99s), 3),
                    max_p99_ms=round(max(p99s), 3), rounds=[round(p, 3) for p in p99s], watchers=sizes.watchers,
                    deliveries=sum(len(ms) for ms in latencies[target.impl]), query=target.watch_query,
                    **context.get(target.impl, {}), **results[target.impl].context())


# -- the servers this file runs: kmock on a port, and the ceiling ------------------------------------------------------


def announce(port: int) -> None:
    print(f"bench server listening: http://127.0.0.1:{port}", file=sys.stderr, flush=True)


async def stdin_reader() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def serve_kmock() -> None:
    """kmock's KubernetesEmulator on a free port, as its pytest fixture runs it, until stdin closes.

    Each line on stdin names a JSON file of ConfigMaps to store in `default` through kmock's
    Python API (how its tests preload state); the count stored is the answer on stdout."""
    import kmock

    configmaps = kmock.resource("v1/configmaps")
    async with kmock.KubernetesEmulator() as emulator, kmock.Server(emulator) as server:
        announce(server.port)
        commands = await stdin_reader()
        while line := await commands.readline():
            objects = orjson.loads(Path(line.decode().strip()).read_bytes())
            for obj in objects:
                emulator.objects[configmaps, "default", obj["metadata"]["name"]] = obj
            print(len(objects), flush=True)


class Ceiling:
    """ConfigMaps as JSON blobs in a dict: create, get, update (resourceVersion checked), list and watch.

    The least any aiohttp app must do: read the body, parse it once to find the name and stamp the
    resourceVersion, and otherwise answer bytes it already has."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[int, bytes]] = {}  # name -> (resourceVersion, JSON)
        self.revision = 1
        self.watchers: set[asyncio.Queue[bytes]] = set()

    def store(self, obj: dict[str, Any], event: bytes) -> bytes:
        self.revision += 1
        obj["metadata"]["resourceVersion"] = str(self.revision)
        data = orjson.dumps(obj)
        self.objects[obj["metadata"]["name"]] = (self.revision, data)
        line = b'{"type":"%b","object":%b}\n' % (event, data)
        for queue in self.watchers:
            queue.put_nowait(line)
        return data

    async def create(self, request: web.Request) -> web.StreamResponse:
        obj = orjson.loads(await request.read())
        if obj["metadata"]["name"] in self.objects:
            return web.json_response({"kind": "Status", "code": 409, "reason": "AlreadyExists"}, status=409)
        return web.Response(body=self.store(obj, b"ADDED"), status=201, content_type="application/json")

    async def get(self, request: web.Request) -> web.StreamResponse:
        found = self.objects.get(request.match_info["name"])
        if found is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return web.Response(body=found[1], content_type="application/json")

    async def update(self, request: web.Request) -> web.StreamResponse:
        obj = orjson.loads(await request.read())
        found = self.objects.get(request.match_info["name"])
        if found is None or obj["metadata"].get("resourceVersion") != str(found[0]):
            return web.json_response({"kind": "Status", "code": 409, "reason": "Conflict"}, status=409)
        return web.Response(body=self.store(obj, b"MODIFIED"), content_type="application/json")

    async def patch(self, request: web.Request) -> web.StreamResponse:
        """Both PATCH forms as a merge into the stored object (no field ownership)."""
        changes = orjson.loads(await request.read())
        found = self.objects.get(request.match_info["name"])
        if found is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        obj = orjson.loads(found[1])
        obj.setdefault("data", {}).update(changes.get("data", {}))
        return web.Response(body=self.store(obj, b"MODIFIED"), content_type="application/json")

    async def list_or_watch(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("1", "true"):
            return await self.watch(request)
        items = b",".join(data for _, data in self.objects.values())
        body = b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[%b]}' % (
            self.revision, items)
        return web.Response(body=body, content_type="application/json")

    async def watch(self, request: web.Request) -> web.StreamResponse:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.watchers.add(queue)
        try:
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            while True:
                await response.write(await queue.get())
        finally:
            self.watchers.discard(queue)


async def serve_ceiling() -> None:
    """The ceiling on a free port, until stdin closes."""
    ceiling = Ceiling()
    app = web.Application()
    app.router.add_post(CONFIGMAPS, ceiling.create)
    app.router.add_get(CONFIGMAPS, ceiling.list_or_watch)
    app.router.add_get(CONFIGMAPS + "/{name}", ceiling.get)
    app.router.add_put(CONFIGMAPS + "/{name}", ceiling.update)
    app.router.add_patch(CONFIGMAPS + "/{name}", ceiling.patch)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.create_server(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    announce(sock.getsockname()[1])
    commands = await stdin_reader()
    while await commands.readline():
        pass
    await runner.cleanup()


# -- pods: LISTs of realistic Pods ------------------------------------------------------------------------------------

PODS = "/api/v1/namespaces/pods/pods"


def pod(name: str, i: int) -> bytes:
    """A Pod as a controller would write it: a ~2.5 KiB spec (no status: no kubelet reports one)."""
    def container(n: str, port: int) -> dict[str, Any]:
        return {
            "name": n, "image": f"registry.example.com/team/{n}:v1.{i % 50}.3",
            "args": ["--listen", f":{port}", "--log-level=info"],
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": [{"name": "POD_INDEX", "value": str(i)}, {"name": "MODE", "value": "production"},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 10},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "initialDelaySeconds": 5},
        }
    return orjson.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "pods", "labels": {"app": "web", "tier": f"t{i % 4}",
                                                                      "pod-template-hash": "5d9c7b8f6d"}},
        "spec": {
            "containers": [container("web", 8080), container("sidecar", 9090)],
            "volumes": [{"name": "config", "configMap": {"name": "web-config"}}],
            "serviceAccountName": "web", "nodeName": f"node-{i % 20}",
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                   "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
        },
    })


def serves_kinds(target: Target) -> bool:
    """Whether the server serves every kind (Pods, CustomResourceDefinitions), not ConfigMaps alone."""
    return target.impl.startswith("capstan") or target.impl == "kube-apiserver"


async def make_pods(target: Target, indexes: Iterator[int]) -> None:
    for i in indexes:
        async with target.http.post(target.url(i, PODS), data=pod(f"web-{i:06}", i), headers=JSON) as made:
            if made.status != 201:
                raise RuntimeError(await failure(made, "POST pod"))
            await made.read()


async def bench_pods(targets: Sequence[Target], sizes: Sizes) -> None:
    capstan = [t for t in targets if serves_kinds(t) and not t.error]
    for target in targets:
        if target not in capstan:
            for op in ("pods-list-json", "pods-list-protobuf"):
                target.emit_na(op, "ms_per_list", "serves no Pods" if not target.error else target.error)
    count = sizes.objects
    for target in capstan:
        async with target.http.post(target.url(0, "/api/v1/namespaces"), headers=JSON,
                                    data=orjson.dumps({"metadata": {"name": "pods"}})) as response:
            await response.read()
        # The Pods name the ServiceAccount "web": ServiceAccount admission refuses Pods whose account is missing.
        async with target.http.post(target.url(0, "/api/v1/namespaces/pods/serviceaccounts"), headers=JSON,
                                    data=orjson.dumps({"metadata": {"name": "web"}})) as response:
            await response.read()
        note(f"{target.impl}: creating {count} pods untimed")
        queue = iter(range(count))
        await asyncio.gather(*(make_pods(target, queue) for _ in range(sizes.workers)))
    for op, accept in (("pods-list-json", "application/json"), ("pods-list-protobuf", PROTOBUF)):
        for target in capstan:
            figures: list[float] = []
            wrong = ""
            for _ in range(sizes.list_rounds + 1):  # the first one warms up
                started = time.perf_counter()
                async with target.http.get(target.url(0, PODS), headers={
                        "Accept": accept, "Accept-Encoding": "identity"}) as response:
                    body = await response.read()
                figures.append((time.perf_counter() - started) * 1000)
                if response.status != 200:
                    wrong = f"LIST answered {response.status}"
                elif accept == PROTOBUF and not body.startswith(PROTOBUF_MAGIC):
                    wrong = "LIST did not answer protobuf"
                elif accept != PROTOBUF and len(orjson.loads(body)["items"]) != count:
                    wrong = "LIST did not answer every pod"
            target.emit(op, "ms_per_list", statistics.median(figures[1:]), correct=not wrong, objects=count,
                        body_bytes=len(body), rounds=[round(f, 1) for f in figures[1:]],
                        **({"error": wrong} if wrong else {}))


# -- crd: CustomResourceDefinitions ------------------------------------------------------------------------------------

CRD_GROUP = "bench.capstan.dev"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_FIELDS = 20  # typed properties of spec, every one validated on create
CRD_COLORS = ["red", "green", "blue"]


def crd(plural: str) -> bytes:
    """A namespaced CRD whose spec has CRD_FIELDS properties: strings with lengths, patterns and enums,
    bounded integers, booleans, a string list and a string map, as operators' CRDs have them."""
    properties: dict[str, Any] = {}
    for i in range(CRD_FIELDS):
        kind = i % 5
        if kind == 0:
            properties[f"name{i:02}"] = {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9-]+$"}
        elif kind == 1:
            properties[f"count{i:02}"] = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
        elif kind == 2:
            properties[f"color{i:02}"] = {"type": "string", "enum": CRD_COLORS}
        elif kind == 3:
            properties[f"flag{i:02}"] = {"type": "boolean"}
        else:
            properties[f"tags{i:02}"] = {"type": "array", "maxItems": 16, "items": {"type": "string"}}
    properties["labels"] = {"type": "object", "additionalProperties": {"type": "string"}}
    return orjson.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{CRD_GROUP}"},
        "spec": {"group": CRD_GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": plural.capitalize().removesuffix("s")},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": properties},
                                   "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
    })


def custom_resource(plural: str, name: str, i: int) -> bytes:
    """One object of crd(plural) with every one of its fields set (~1 KiB)."""
    spec: dict[str, Any] = {}
    for f in range(CRD_FIELDS):
        kind = f % 5
        if kind == 0:
            spec[f"name{f:02}"] = f"value-{i}-{f}"
        elif kind == 1:
            spec[f"count{f:02}"] = i * 7 + f
        elif kind == 2:
            spec[f"color{f:02}"] = CRD_COLORS[(i + f) % 3]
        elif kind == 3:
            spec[f"flag{f:02}"] = bool((i + f) % 2)
        else:
            spec[f"tags{f:02}"] = [f"tag-{t}" for t in range(4)]
    spec["labels"] = {"team": "bench", "tier": f"t{i % 4}"}
    kind_name = plural.capitalize().removesuffix("s")
    return orjson.dumps({"apiVersion": f"{CRD_GROUP}/v1", "kind": kind_name,
                         "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def custom_resources(plural: str) -> str:
    return f"/apis/{CRD_GROUP}/v1/namespaces/default/{plural}"


async def until_served(target: Target, plural: str, rounds: Rounds) -> float | None:
    """POST the CRD, then LIST its resource every 5 ms until it answers 200: the milliseconds that took."""
    started = time.perf_counter()
    async with target.http.post(target.url(0, CRDS), data=crd(plural), headers=JSON) as response:
        if response.status != 201:
            rounds.fail(await failure(response, "POST CRD"))
            return None
        await response.read()
    while time.perf_counter() - started < DELIVERY_TIMEOUT:
        async with target.http.get(target.url(0, custom_resources(plural))) as response:
            await response.read()
            if response.status == 200:
                return (time.perf_counter() - started) * 1000
        await asyncio.sleep(0.005)
    rounds.fail(f"{plural}: not served within {DELIVERY_TIMEOUT}s")
    return None


async def bench_crd(targets: Sequence[Target], sizes: Sizes) -> None:
    capstan = [t for t in targets if serves_kinds(t)]
    for target in targets:
        if target not in capstan:
            target.emit_na("crd", "ms_until_served", "serves no CustomResourceDefinitions")
            target.emit_na("crd-create", "creates_per_s", "serves no CustomResourceDefinitions")
    served = {t.impl: Rounds() for t in capstan}
    for r, target in rotations(capstan, sizes.crd_rounds):
        target.begin()
        ms = await until_served(target, f"benchwidgets{r}s", served[target.impl])
        if ms is not None:
            served[target.impl].figures.append(ms)
    for target in capstan:
        if target.error:
            target.emit("crd", "ms_until_served", 0.0, correct=False, error=target.error)
            continue
        rounds = served[target.impl]
        figures = rounds.figures or [float(DELIVERY_TIMEOUT * 1000)]
        target.emit("crd", "ms_until_served", statistics.median(figures), correct=not rounds.failures,
                    worst_ms=round(max(figures), 1), rounds=[round(f, 1) for f in figures],
                    **({"error": rounds.first_error} if rounds.failures else {}))

    plural = "benchwidgets0s"
    path = custom_resources(plural)

    def job(target: Target, first: int) -> Job:
        async def create(i: int) -> str | None:
            n = first + i
            body = custom_resource(plural, f"cr-{n:06}", n)
            async with target.http.post(target.url(n, path), data=body, headers=JSON) as response:
                if response.status != 201:
                    return await failure(response, "POST")
                await response.read()
            return None

        return create

    results = {t.impl: Rounds() for t in capstan}
    for target in (t for t in capstan if not t.error):
        await rate_round(target, Rounds(), sizes.crd_warmup_creates, sizes, job(target, 0))
    for r, target in rotations(capstan, sizes.crd_rounds):
        if not results[target.impl].stopped:
            first = sizes.crd_warmup_creates + r * sizes.crd_creates
            await rate_round(target, results[target.impl], sizes.crd_creates, sizes, job(target, first))
    emit_rates("crd-create", "creates_per_s", capstan, results, workers=sizes.workers, fields=CRD_FIELDS,
               object_bytes=len(custom_resource(plural, "cr-000000", 0)))


# -- main --------------------------------------------------------------------------------------------------------------


async def run(targets: Sequence[Target], sizes: Sizes, ops: Sequence[str]) -> None:
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    for target in targets:
        if not target.error:
            try:
                await prepare(target)
            except (aiohttp.ClientError, TimeoutError, OSError, RuntimeError) as err:
                target.error = str(err)
                note(f"{target.impl}: not running: {err}")
    for target in targets:
        target.session = target.open_session(sizes.workers, timeout)
    workloads: dict[str, Callable[[], Awaitable[None]]] = {
        "get": lambda: bench_get(targets, sizes),
        "update": lambda: bench_update(targets, sizes),
        "merge-patch": lambda: bench_merge_patch(targets, sizes),
        "apply": lambda: bench_apply(targets, sizes),
        "list-json": lambda: bench_list(targets, sizes, protobuf=False),
        "list-protobuf": lambda: bench_list(targets, sizes, protobuf=True),
        "list-metadata": lambda: bench_list(targets, sizes, protobuf=True, metadata=True),
        "crd": lambda: bench_crd(targets, sizes),
        "pods": lambda: bench_pods(targets, sizes),
        "watch": lambda: bench_watch(targets, sizes),
    }
    try:
        note("create ...")
        await bench_create(targets, sizes, measure="create" in ops)
        for op in workloads:  # in this order whatever --only says: the watch's creates come after the lists
            if op in ops:
                note(f"{op} ...")
                await workloads[op]()
    finally:
        for target in targets:
            if target.session is not None:
                await target.session.close()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.http", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(OPS), help=f"comma-separated workloads (default {','.join(OPS)})")
    parser.add_argument("--impls", default=",".join(DEFAULT_IMPLS),
                        help=f"comma-separated servers among {','.join(IMPLS)} (default {','.join(DEFAULT_IMPLS)})")
    parser.add_argument("--kube-apiserver", default=os.environ.get("KUBE_APISERVER", ""), metavar="PATH",
                        help="the kube-apiserver binary the kube-apiserver layout runs (default $KUBE_APISERVER)")
    parser.add_argument("--serve", choices=("kmock", "ceiling"), help=argparse.SUPPRESS)  # internal: a server process
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS, impls=IMPLS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        asyncio.run(serve_kmock() if args.serve == "kmock" else serve_ceiling())
        return 0
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    impls = [impl for impl in IMPLS if impl in args.impls.split(",")]
    root = Path(tempfile.mkdtemp(prefix="capstan-bench-http-"))
    children = Children(root)
    failed = False
    try:
        targets = start_targets(children, root, impls, args.kube_apiserver)
        asyncio.run(run(targets, sizes, args.only.split(",")))
        wrong = [f"{t.impl}:{op}" for t in targets if t.impl != "kmock" for op in t.wrong]
        if wrong:
            note(f"failed or answered wrongly: {' '.join(wrong)}")
            failed = True
    except Exception:
        traceback.print_exc()
        failed = True
    finally:
        children.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
