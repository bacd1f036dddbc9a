"""What `--nodes N` configures: each simulated node's shape and the simulated kubelet's clocks, apart from the
simulator (status.py, simulator.py, incore.py) so that the command line and a core's start read them without
loading the simulator, which runs only when nodes are asked for."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeShape:
    """What every simulated node has: capacity (= allocatable), the zones they spread over, the prefix of
    their names, and the address ranges their InternalIPs and podCIDRs come from."""

    cpu: str = "32"
    memory: str = "256Gi"
    pods: int = 110
    ephemeral_storage: str = "1Ti"
    zones: tuple[str, ...] = ("zone-a", "zone-b", "zone-c")
    region: str = "capstan"
    prefix: str = "capstan-node-"
    node_network: str = "172.20.0.0/16"
    cluster_cidr: str = "10.244.0.0/14"  # one /24 per node (1,024 nodes), as kube-controller-manager's IPAM does

    def name(self, index: int) -> str:
        return f"{self.prefix}{index}"

    def zone(self, index: int) -> str:
        return self.zones[index % len(self.zones)] if self.zones else ""

    def internal_ip(self, index: int) -> str:
        network = ipaddress.ip_network(self.node_network)
        return str(network.network_address + 2 + index)

    def pod_cidr(self, index: int) -> str:
        """ValueError when the cluster CIDR has no /24 left for this node."""
        network = ipaddress.ip_network(self.cluster_cidr)
        if index >= 2 ** max(0, 24 - network.prefixlen):
            raise ValueError(f"cluster CIDR {self.cluster_cidr} has no /24 for node {index}")
        return f"{network.network_address + index * 256}/24"


@dataclass(frozen=True)
class Timing:
    """The simulated kubelet's clocks (seconds). The defaults are the kubelet's, except run_seconds (how long a
    container that is to exit runs) and stop_seconds (how long stopping a Pod's containers takes)."""

    run_seconds: float = 2.0
    stop_seconds: float = 0.5
    lease_renew: float = 10.0  # the kubelet renews its Lease every leaseDuration/4
    lease_duration: int = 40
    status_report: float = 300.0  # nodeStatusReportFrequency: an unchanged status is still written this often
    backoff_base: float = 10.0  # the kubelet's crash back-off: base, doubled per restart, capped
    backoff_cap: float = 300.0


DEFAULT_SHAPE = NodeShape()
DEFAULT_TIMING = Timing()


@dataclass(frozen=True)
class NodesConfig:
    """`--nodes N` and its companions: how many, what each has, the simulated kubelet's clocks."""

    count: int = 0
    shape: NodeShape = DEFAULT_SHAPE
    timing: Timing = DEFAULT_TIMING
