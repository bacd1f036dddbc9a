"""The two versions Capstan reports, in one place so that `/version`, `capstan --version` and
`capstan kube-apiserver --version` never disagree: the Kubernetes release whose API behaviour Capstan implements
and is measured against (what clients, kubectl's version-skew dispatcher and envtest read as the server's
version), and Capstan's own release.

Contract: `KUBE_MAJOR`/`KUBE_MINOR`/`KUBE_GIT_VERSION` name kube-apiserver 1.28; `CAPSTAN_VERSION` equals the
package metadata's version (pyproject.toml; tests/cli/test_version.py holds them together).
"""

from __future__ import annotations

import platform
from typing import Any

CAPSTAN_VERSION = "0.1.0"

KUBE_MAJOR, KUBE_MINOR, KUBE_PATCH = "1", "28", "15"
KUBE_GIT_VERSION = f"v{KUBE_MAJOR}.{KUBE_MINOR}.{KUBE_PATCH}"

# kube's "unknown" build date (k8s.io/component-base/version's default): Capstan is not built from a commit
UNKNOWN_BUILD_DATE = "1970-01-01T00:00:00Z"


def info() -> dict[str, Any]:
    """kube's version.Info as /version answers it: the Kubernetes fields name the release implemented; the
    build fields, which in kube describe the Go binary, name Capstan's release and its interpreter."""
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": KUBE_GIT_VERSION,
        "gitCommit": f"capstan-{CAPSTAN_VERSION}",
        "gitTreeState": "clean",
        "buildDate": UNKNOWN_BUILD_DATE,
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{platform.system().lower()}/{arch()}",
    }


def arch() -> str:
    """This machine's architecture under Go's name (GOARCH), as kube's platform field spells it."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def describe() -> str:
    """`capstan --version`: Capstan's release and the Kubernetes release it implements."""
    return f"Capstan {CAPSTAN_VERSION} (Kubernetes {KUBE_GIT_VERSION})"
