"""Settings every property test shares. The suite runs under xdist on a machine whose cores it fills, so how long
hypothesis takes to generate an example or run one says nothing about the code: its timing checks (the
too_slow health check, the per-example deadline) would fail correct tests, and are off. The number of examples
and everything a test sets itself stay as they are."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("capstan", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("capstan")
