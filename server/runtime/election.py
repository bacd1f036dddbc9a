"""Leader election on a coordination.k8s.io/v1 Lease, as kube-controller-manager elects (client-go leaderelection),
so that when several cores serve one store the singleton controllers run in exactly one of them.

Every core is a candidate. Each try (tryAcquireOrRenew) reads the Lease `capstan-controllers` in `kube-system`
through the core's own verbs and:
- creates it when absent (holderIdentity = this core, acquireTime = renewTime = now, leaseTransitions 0);
- leaves it alone when another holder's lease has not expired. Expiry is judged by this core's own clock from
  when it last saw the Lease change (client-go's observedTime), never from renewTime, so clocks that disagree
  between machines do not matter: a Lease unchanged for leaseDurationSeconds since this core first saw it so
  is free;
- otherwise updates it with the resourceVersion it read as precondition (409 for the loser of a race), keeping
  acquireTime and leaseTransitions when renewing its own, or taking it over with acquireTime = now and
  leaseTransitions + 1.

A standby tries every retry period (with client-go's jitter of 1.2). A leader renews every retry period; when
no renewal has succeeded for the renew deadline it stops leading at once (OnStoppedLeading), its singletons
stopped before anyone else can hold the Lease (renew deadline < lease duration), and it becomes a candidate
again. A leader that stops cleanly releases the Lease (client-go's ReleaseOnCancel: empty holder, duration 1 s)
so a standby takes over at its next try; one that dies is replaced within the lease duration.

Example (15 s / 10 s / 2 s): A holds the Lease and renews at t=0, then dies. B saw that renewal at t≈0..2;
B takes the Lease at its first try after t≈15..17 and its singletons resume from the store.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import apimetrics, errors
from server.machinery.codec import gotime
from server.objects.core import Core
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

JITTER = 1.2  # client-go's JitterFactor: a standby waits retry_period * [1, 1 + JITTER)
LEASE_NAME = "capstan-controllers"  # kube-controller-manager's is "kube-controller-manager"
LEASE_NAMESPACE = "kube-system"


def default_identity() -> str:
    """client-go's `<hostname>_<uuid>`, as kube-controller-manager names itself."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class ElectionConfig:
    """--leader-elect and its timings (kube-controller-manager's defaults). enabled=False: this core leads
    alone, always, as a kube-controller-manager run with --leader-elect=false."""

    enabled: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    namespace: str = LEASE_NAMESPACE
    name: str = LEASE_NAME
    identity: str = field(default_factory=default_identity)

    def problems(self) -> list[str]:
        """NewLeaderElector's checks, in its words; empty when the configuration can run."""
        found = []
        if self.lease_duration <= self.renew_deadline:
            found.append("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            found.append("renewDeadline must be greater than retryPeriod*JitterFactor")
        for name, value in (("leaseDuration", self.lease_duration), ("renewDeadline", self.renew_deadline),
                            ("retryPeriod", self.retry_period)):
            if value <= 0:
                found.append(f"{name} must be greater than zero")
        return found


Callback = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Singleton:
    """A part that runs in the leading core only: started when it becomes leader, stopped when it stops."""

    name: str
    start: Callback
    stop: Callback


def awaitable(start: Callable[[], None]) -> Callback:
    """A synchronous start as a Singleton's."""
    async def run() -> None:
        start()
    return run


class LeaderElector:
    """One candidate. `on_started` runs when this core becomes leader, `on_stopped` when it stops leading
    (lost, or stopping); neither runs twice in a row."""

    def __init__(self, core: Core, config: ElectionConfig, *, on_started: Callback, on_stopped: Callback) -> None:
        self._core = core
        self.config = config
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._leading = False
        self._observed: dict[str, Any] | None = None  # the Lease spec as last read or written
        self._observed_at = 0.0  # monotonic: when _observed last changed
        self._renewed_at = 0.0  # monotonic: this core's last successful acquire or renewal
        self._task: asyncio.Task[None] | None = None
        apimetrics.leading(config.name, False)  # leader_election_master_status: a candidate, until it leads

    def leading(self) -> bool:
        return self._leading

    def renewed_at(self) -> float:
        """time.monotonic() of this core's last successful acquire or renewal; a leader stops leading no sooner
        than the renew deadline after it."""
        return self._renewed_at

    async def start(self) -> None:
        """Try once now (a sole core leads before start returns), then keep trying in the background."""
        if await self._try():
            await self._lead()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="capstan-leader-election")

    async def stop(self, *, release: bool = True) -> None:
        """Stop campaigning; a leader stops its singletons and, when `release`, gives the Lease up. release=False
        is what a crash leaves behind: the Lease expires on its own."""
        await cancel_all((self._task,))
        if self._leading:
            await self._unlead()
            if release:
                await self._release()

    async def _run(self) -> None:
        while True:
            if not self._leading:
                await asyncio.sleep(self.config.retry_period * (1 + random.random() * JITTER))
                if await self._try():
                    await self._lead()
                continue
            await asyncio.sleep(self.config.retry_period)
            if await self._try():
                continue
            if time.monotonic() - self._renewed_at >= self.config.renew_deadline:
                log.warning("leader election: %s could not renew lease %s/%s within %.1fs; stopping leading",
                            self.config.identity, self.config.namespace, self.config.name,
                            self.config.renew_deadline)
                await self._unlead()

    async def _lead(self) -> None:
        log.info("leader election: %s acquired lease %s/%s", self.config.identity, self.config.namespace,
                 self.config.name)
        self._leading = True
        apimetrics.leading(self.config.name, True)
        try:
            await self._on_started()
        except Exception:
            log.exception("leader election: starting the singletons failed")

    async def _unlead(self) -> None:
        self._leading = False
        apimetrics.leading(self.config.name, False)
        try:
            await self._on_stopped()
        except Exception:
            log.exception("leader election: stopping the singletons failed")

    async def _try(self) -> bool:
        """tryAcquireOrRenew, bounded so a hung store cannot outlast the renew deadline."""
        budget = self.config.retry_period
        if self._leading:
            budget = max(0.0, self.config.renew_deadline - (time.monotonic() - self._renewed_at))
        try:
            async with asyncio.timeout(max(budget, 0.01)):
                return await self._try_acquire_or_renew()
        except (TimeoutError, errors.ApiError) as err:
            log.info("leader election: %s failed to acquire or renew: %s", self.config.identity, err)
            return False
        except Exception:
            log.exception("leader election: acquire or renew failed")
            return False

    async def _try_acquire_or_renew(self) -> bool:
        now_wall, now = time.time(), time.monotonic()
        micro = gotime.format_micro(int(now_wall), int(now_wall % 1 * 1e9))
        try:
            got = await self._core.get(core_pb2.GetRequest(path=self._path()))
        except errors.ApiError as err:
            if err.code != 404:
                raise
            spec = {"holderIdentity": self.config.identity, "leaseDurationSeconds": self._duration_seconds(),
                    "acquireTime": micro, "renewTime": micro, "leaseTransitions": 0}
            await self._write(None, spec)
            self._observe(spec, now)
            self._renewed_at = now
            return True
        lease = orjson.loads(got.object.data)
        old = lease.get("spec") or {}
        if old != self._observed:
            self._observe(old, now)
        holder = old.get("holderIdentity") or ""
        duration = float(old.get("leaseDurationSeconds") or 0)
        if holder and holder != self.config.identity and self._observed_at + duration > now:
            return False
        transitions = int(old.get("leaseTransitions") or 0)
        acquired = old.get("acquireTime") or micro
        if holder != self.config.identity:  # taken over (an expired or released Lease)
            transitions, acquired = transitions + 1, micro
        spec = {"holderIdentity": self.config.identity, "leaseDurationSeconds": self._duration_seconds(),
                "acquireTime": acquired, "renewTime": micro, "leaseTransitions": transitions}
        try:
            await self._write(lease, spec)
        except errors.ApiError as err:
            if err.code in (404, 409):
                return False  # another candidate won the race, or the Lease went: the next try sees
            raise
        self._observe(spec, now)
        self._renewed_at = now
        return True

    async def _release(self) -> None:
        """The Lease with no holder and a one-second duration, so a standby's next try takes it."""
        try:
            got = await self._core.get(core_pb2.GetRequest(path=self._path()))
            lease = orjson.loads(got.object.data)
            old = lease.get("spec") or {}
            if old.get("holderIdentity") != self.config.identity:
                return
            now_wall = time.time()
            micro = gotime.format_micro(int(now_wall), int(now_wall % 1 * 1e9))
            await self._write(lease, {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": micro,
                                      "renewTime": micro, "leaseTransitions": int(old.get("leaseTransitions") or 0)})
        except errors.ApiError as err:
            log.info("leader election: releasing lease %s/%s failed: %s", self.config.namespace,
                     self.config.name, err)

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        self._observed, self._observed_at = spec, now

    def _duration_seconds(self) -> int:
        return max(1, round(self.config.lease_duration))

    def _path(self, *, named: bool = True) -> core_pb2.ResourcePath:
        return core_pb2.ResourcePath(group="coordination.k8s.io", version="v1", resource="leases",
                                     namespace=self.config.namespace, name=self.config.name if named else "")

    async def _write(self, lease: dict[str, Any] | None, spec: dict[str, Any]) -> None:
        """Create the Lease (lease None) or update it, the resourceVersion read as precondition."""
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.config.name, "namespace": self.config.namespace}, "spec": spec}
            await self._core.create(core_pb2.CreateRequest(path=self._path(named=False), object=_raw(body)))
            return
        body = {**lease, "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec}
        await self._core.update(core_pb2.UpdateRequest(path=self._path(), object=_raw(body)))


def _raw(body: dict[str, Any]) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))
