"""Settings every property test shares. The suite runs under xdist on a machine whose cores it fills, so how long
hypothesis takes to generate an example or run one says nothing about the code: its timing checks (the
too_slow health check, the per-example deadline) would fail correct tests, and are off. The number of examples
and everything a test sets itself stay as they are. The dependency-floors smoke set runs without hypothesis
(it installs the package's testing extra alone), so there is nothing to set there."""

from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:
    pass
else:
    settings.register_profile("capstan", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("capstan")
