"""kube-apiserver 1.28's legacy token tracking controller (pkg/controlplane/controller/legacytokentracking): the
ConfigMap `kube-system/kube-apiserver-legacy-service-account-token-tracking`, whose `since` says from which day
(UTC) the server has labelled the Secrets of the secret-based tokens it accepts with the day they were last used,
so a cluster's operator knows how far back an absent label means "not used".

Contracts, as kube's: the ConfigMap is created with today's date when missing, at most once in CREATE_EVERY
seconds (a ConfigMap deleted again and again is not recreated in a loop); one whose `since` is not a date
(YYYY-MM-DD) is given today's; a valid one is left alone. kube-apiserver runs it in every server; here it is a
singleton, since every core would write the same.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable

from server.controllers.workload.keyed import Key, KeyedController, Obj, path
from server.machinery import errors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

NAMESPACE = "kube-system"
NAME = "kube-apiserver-legacy-service-account-token-tracking"
DATA_KEY = "since"
CREATE_EVERY = 30 * 60.0  # seconds: kube's creation rate limiter, rate.Every(30 * time.Minute)
KEY: Key = (NAMESPACE, NAME)


def _is_date(value: object) -> bool:
    """Go's time.Parse("2006-01-02", value) succeeds."""
    if not isinstance(value, str) or len(value) != 10 or value[4] != "-" or value[7] != "-":
        return False
    try:
        datetime.datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        return False
    return value[:4].isdigit() and value[5:7].isdigit() and value[8:].isdigit()


class LegacyTokenTracking(KeyedController):
    name = "legacy-token-tracking-controller"
    manager = "kube-apiserver"  # kube-apiserver's own, written through its loopback client

    def __init__(self, core: Core, informers: SharedInformers | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(core, informers)
        self.clock = clock
        self._created_at: float | None = None
        self.config_maps = self.follow(path("configmaps", NAMESPACE), self._changed,
                                       field_selector=f"metadata.name={NAME}")

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        self.queue(KEY)

    def started(self) -> None:
        self.queue(KEY)

    def _today(self) -> str:
        return datetime.datetime.fromtimestamp(self.clock(), datetime.UTC).strftime("%Y-%m-%d")

    async def sync(self, key: Key) -> None:
        found = self.config_maps.get(KEY)
        if found is None:
            now = self.clock()
            if self._created_at is not None and now - self._created_at < CREATE_EVERY:
                self.queue_after(KEY, self._created_at + CREATE_EVERY - now)
                return
            self._created_at = now
            obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NAMESPACE},
                   "data": {DATA_KEY: self._today()}}
            try:
                await self.create(path("configmaps", NAMESPACE), obj)
            except errors.ApiError as err:
                if err.code == 409:
                    return
                self._created_at = None  # kube cancels the reservation of a create that failed
                raise
            return
        data = found.get("data") or {}
        if _is_date(data.get(DATA_KEY)):
            return
        found = {**found, "data": {**data, DATA_KEY: self._today()}}
        try:
            await self.update(path("configmaps", NAMESPACE), found)
        except errors.ApiError as err:
            if err.code not in (404, 409):
                raise


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    controller = LegacyTokenTracking(core, informers)
    return [Singleton("LegacyTokenTrackingController", controller.start, controller.stop)]

