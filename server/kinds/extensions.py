"""admissionregistration.k8s.io/v1, apiregistration.k8s.io/v1 and autoscaling/v2 (with autoscaling/v1's
HorizontalPodAutoscaler): one module per group (admissionregistration, apiregistration, autoscaling), gathered
here."""

from __future__ import annotations

from server.kinds import admissionregistration, apiregistration, autoscaling
from server.registry.resources import Resource

KINDS: tuple[Resource, ...] = (*apiregistration.KINDS, *autoscaling.KINDS, *admissionregistration.KINDS)
