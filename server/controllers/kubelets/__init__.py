"""Simulated nodes: what a kubelet reports, without containers, for Nodes this process registers (kwok's role).

`status` holds the pure part (a Node as a kubelet registers it, a Pod's status at an instant from its spec, its
annotations and when it was first seen); `simulator` the loop that registers Nodes, renews their Leases and
writes Pod status through any API (`api.NodeApi`); `incore` runs it over a core's own verbs as an elected
singleton.
"""
