"""Node failure on demand for tests against simulated nodes (`capstan serve --nodes N`, `capstan nodes`): a
node's kubelet is silenced by annotating its Node `capstan.io/heartbeat: stopped` (no Lease renewal, no status,
no Pod progress) and brought back by removing the annotation; every node silenced through one `Heartbeats` is
brought back by `resume_all`, which the `capstan_nodes` fixture calls after its test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes import client

HEARTBEAT = "capstan.io/heartbeat"  # server/controllers/kubelets/status.py's annotation


class Heartbeats:
    def __init__(self, api: client.ApiClient) -> None:
        from kubernetes import client as k8s

        self._nodes = k8s.CoreV1Api(api)
        self._stopped: set[str] = set()

    def stop(self, node: str) -> None:
        """The node's kubelet falls silent; after node-monitor-grace-period the node is Unknown and tainted."""
        self._nodes.patch_node(node, {"metadata": {"annotations": {HEARTBEAT: "stopped"}}})
        self._stopped.add(node)

    def resume(self, node: str) -> None:
        """The node's kubelet reports Ready again and takes its Pods up."""
        self._nodes.patch_node(node, {"metadata": {"annotations": {HEARTBEAT: None}}})
        self._stopped.discard(node)

    def resume_all(self) -> None:
        for node in sorted(self._stopped):
            self.resume(node)
