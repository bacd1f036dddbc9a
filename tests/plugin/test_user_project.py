"""A user's project whose own packages are named as Capstan's (`server`, `gateway`, `storage`) uses the pytest
plugin: built in a temporary directory, its tests run in a pytest process of their own, as its developer runs
them, and the `capstan serve` the plugin starts still imports Capstan's packages, not the project's.

The plugin itself, loaded into that pytest process beside the project's packages, imports none of the three.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN_MODULES = ["capstan.testing.plugin", "capstan.testing.server", "capstan.testing.access",
                  "capstan.testing.apply", "capstan.testing.registered", "capstan.testing.webhooks",
                  "capstan.cli.kubeconfig"]  # the last: how the plugin renders the started server's kubeconfig
OWN = ("server", "gateway", "storage")
USER_TEST = textwrap.dedent('''
    import gateway
    import server
    import storage
    from kubernetes import client


    def test_configmap_round_trip(k8s_client, capstan_namespace):
        assert (server.OWNER, gateway.OWNER, storage.OWNER) == ("user", "user", "user")
        core = client.CoreV1Api(k8s_client)
        core.create_namespaced_config_map(capstan_namespace, {"metadata": {"name": "cm"}, "data": {"k": "v"}})
        assert core.read_namespaced_config_map("cm", capstan_namespace).data == {"k": "v"}
''')


def _project(root: Path) -> Path:
    """A project with its own server/, gateway/ and storage/ packages (server.auth too, the first Capstan
    imports) and one test using the plugin's fixtures."""
    for name in OWN:
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text('OWNER = "user"\n')
    (root / "server" / "auth.py").write_text('raise ImportError("the user\'s server.auth was imported")\n')
    (root / "tests").mkdir()
    (root / "tests" / "test_cluster.py").write_text(USER_TEST)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return root


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CAPSTAN_KUBECONFIG", "PYTHONPATH")}
    return {**env, **extra}


@pytest.mark.parametrize(("how", "command", "pythonpath"), [
    # `python -m pytest` in the project: its directory is first on sys.path, in pytest and in what pytest starts
    ("python -m pytest in the project", ["-m", "pytest"], False),
    # PYTHONPATH names the project, so every Python process started from the test run sees its packages first
    ("PYTHONPATH names the project", ["-m", "pytest"], True),
])
def test_a_project_with_packages_named_as_capstans(tmp_path: Path, how: str, command: list[str],
                                                   pythonpath: bool) -> None:
    project = _project(tmp_path / "project")
    env = _environment(**({"PYTHONPATH": str(project)} if pythonpath else {}))
    done = subprocess.run([sys.executable, *command, "-q", "-p", "no:cacheprovider", "-p", "no:asyncio",
                           "--basetemp", str(tmp_path / "basetemp"), "tests"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{how}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert "1 passed" in done.stdout
    assert "capstan: served https://127.0.0.1:" in done.stdout


@pytest.mark.parametrize("module", PLUGIN_MODULES)
def test_the_plugin_imports_none_of_capstans_common_names(module: str) -> None:
    script = f"import json, sys, {module}\nprint(json.dumps(sorted(n for n in {OWN!r} if n in sys.modules)))"
    done = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True, timeout=60,
                          check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == []
