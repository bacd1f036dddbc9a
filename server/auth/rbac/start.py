"""Starting RBAC with the core: `await start_rbac(core)` reconciles kube's bootstrap policy, fills the index
from one list of each RBAC kind and starts following their watches, and starts the ClusterRole aggregation
controller; it returns the authorizer, which answers from then on. `await authorizer.stop()` stops both.
"""

from __future__ import annotations

from server.auth.rbac.aggregation import AggregationController
from server.auth.rbac.authorizer import RbacAuthorizer
from server.auth.rbac.cache import RbacCache
from server.auth.rbac.index import RbacIndex
from server.auth.rbac.reconcile import reconcile
from server.objects.core import Core


class RunningRbac(RbacAuthorizer):
    """The authorizer, with the watches and the controller that keep it current."""

    def __init__(self, core: Core) -> None:
        super().__init__(RbacIndex())
        self.cache = RbacCache(core, self.index)
        self.aggregation = AggregationController(core, self.index)

    async def stop(self) -> None:
        await self.aggregation.stop()
        await self.cache.stop()


async def start_rbac(core: Core, *, aggregate: bool = True) -> RunningRbac:
    """aggregate=False leaves the aggregation controller to the caller (start_core runs it when elected)."""
    rbac = RunningRbac(core)
    await reconcile(core)
    await rbac.cache.start()
    if aggregate:
        rbac.aggregation.start()
    return rbac
