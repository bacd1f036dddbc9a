"""networking.k8s.io/v1, policy/v1, scheduling.k8s.io/v1, node.k8s.io/v1 and discovery.k8s.io/v1 kinds: one
module per group (networking, policy, scheduling, nodeclasses, discovery), gathered here in kube-apiserver's
group priority order, which /apis lists them in."""

from __future__ import annotations

from server.kinds import discovery, networking, nodeclasses, policy, scheduling
from server.registry.resources import Resource

KINDS: tuple[Resource, ...] = (*networking.KINDS, *policy.KINDS, *scheduling.KINDS, *nodeclasses.KINDS,
                               *discovery.KINDS)
