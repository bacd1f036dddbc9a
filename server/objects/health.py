"""The core's named health checks, named as kube-apiserver names its own.

The gateway serves /healthz, /livez and /readyz from these (gateway/health.py lays them out); the
core only answers which of its checks pass. The names are kube-apiserver's where Capstan has the
same part: `etcd` and `etcd-readiness` for the store (EtcdOptions.addEtcdHealthEndpoint: a read
through the storage client), `informer-sync` for the core's watches having listed once, and
`poststarthook/<name>` for what the core started (GenericAPIServer.AddPostStartHook).
`etcd-quota` is Capstan's own, readiness only: it fails while the store is over its quota, as etcd's
/health reports false under its NOSPACE alarm (kube has no such check: its etcd check only reads).

A check returns None when it passes, else the reason it fails; the reason goes to the core's log
only, never to an HTTP client (kube-apiserver withholds it too, and grpc.health.v1 carries no text).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from storage import Store
from storage.errors import StorageError

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[str | None]]

STORE_TIMEOUT = 2.0  # seconds a store probe may take: kube's --etcd-healthcheck-timeout default
PROBE_KEY = b"/health"  # what etcd's health check reads (storagebackend/factory/etcd3.go); never written here


class HealthChecks:
    """Named checks in the order they were added. Unknown names raise KeyError."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        if name in self._checks:
            raise ValueError(f"health check {name!r} added twice")
        self._checks[name] = check

    def names(self) -> list[str]:
        return list(self._checks)

    async def run(self, name: str) -> bool:
        """Whether the check passes; a failure's reason is logged."""
        check = self._checks[name]
        try:
            reason = await check()
        except Exception as err:  # a check that breaks fails; it never breaks the health endpoint
            reason = f"{type(err).__name__}: {err}"
        if reason is not None:
            log.warning("health check %s failed: %s", name, reason)
        return reason is None

    async def run_all(self) -> dict[str, bool]:
        results = await asyncio.gather(*(self.run(name) for name in self._checks))
        return dict(zip(self._checks, results, strict=True))


def store_check(store: Store) -> Check:
    """A real read of the store within STORE_TIMEOUT: a closed, failing or stuck store fails it."""

    async def check() -> str | None:
        try:
            async with asyncio.timeout(STORE_TIMEOUT):
                await store.get(PROBE_KEY)
        except TimeoutError:
            return f"the store did not answer a read within {STORE_TIMEOUT}s"
        except StorageError as err:
            return f"the store failed a read: {err}"
        return None

    return check


def done() -> Check:
    """A start hook that completed before the core served anything: kube's postStartHookHealthz once
    its done channel is closed."""

    async def check() -> str | None:
        return None

    return check


def condition(holds: Callable[[], bool], reason: str) -> Check:
    """Passes while holds() is true (a controller running, a first list in), else fails with reason."""

    async def check() -> str | None:
        return None if holds() else reason

    return check


QUOTA_HEADROOM = 3 << 19  # 1.5 MiB: the largest object kube-apiserver's storage takes


def quota_check(store: Store) -> Check:
    """Fails while the space left under the store's quota is less than QUOTA_HEADROOM (a tenth of the
    quota if that is less), where the next large write may be refused; passes again once space is freed."""

    async def check() -> str | None:
        quota = store.quota_bytes()
        if quota is None:
            return None
        used = store.size_bytes()
        if quota - used < min(QUOTA_HEADROOM, quota // 10):
            return f"the store holds {used} bytes, near its quota of {quota}: large writes are refused"
        return None

    return check
