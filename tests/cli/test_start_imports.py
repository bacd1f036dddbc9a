"""What `capstan serve` imports to start, and what it leaves to first use (docs/architecture.md, "A start does
only what serving needs"): a fresh interpreter imports the command, and each module below is absent or present.
The CEL engine loads as its extension module alone, and the package imported later hands out the same engine.
The commands that serve nothing (capstan/cli/tools.py) run without the server's modules. Each code of the table
runs in one interpreter for all of its rows (once in each test process)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imported_after(code: str, names: list[str]) -> dict[str, bool]:
    script = f"import json, sys\n{code}\nprint(json.dumps({{n: n in sys.modules for n in {names!r}}}))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True)
    loaded: dict[str, bool] = json.loads(done.stdout.splitlines()[-1])
    return loaded


@functools.cache
def _after(code: str) -> dict[str, bool]:
    """Every module the table names, each loaded or not after `code`."""
    return _imported_after(code, sorted({module for case, module, _ in CASES if case == code}))


START = "import capstan.cli.commands"
FIRST_RULE = (
    "from server.machinery.crdschema.cel import rules\n"
    "compiled = rules.compile_schema({'type': 'object', 'x-kubernetes-validations': [{'rule': 'self.x == 1'}],"
    " 'properties': {'x': {'type': 'integer'}}}, '')\n"
    "assert rules.validate(compiled.root, {'x': 2}, None)"
)
FIRST_YAML = (
    "from server.machinery.codec import yamlread\n"
    "from gateway.codecs import yaml\n"
    "assert yamlread.load(b'a: [1, {b: yes}]') == {'a': [1, {'b': True}]}\n"
    "assert yaml.json_to_yaml(b'{\"a\":\"yes\"}') == b'a: \"yes\"\\n'"
)
# `capstan check` on a directory with no store, as the console script runs it: it fails, having imported only
# what it needs
TOOL = (
    "sys.argv = ['capstan', 'check', '--data-dir', '/nonexistent']\n"
    "from capstan.cli import launch\n"
    "try:\n    launch.main()\nexcept SystemExit as stop:\n    assert stop.code == 1, stop.code"
)


CASES = [
    (START, "capstan.cli.commands", True),
    (START, "aiohttp", True),
    (START, "cel", False),  # the CEL package imports its REPL (prompt_toolkit, typer, rich)
    (START, "cel.cel", False),  # the engine: with the first rule
    (START, "prompt_toolkit", False),
    (START, "server.machinery.crdschema.cel.rules", False),  # with the first CRD
    (START, "server.machinery.crdschema.cel.parse", False),  # with the first rule or ValidatingAdmissionPolicy
    (START, "server.machinery.crdschema.cel.check", False),
    (START, "yaml", False),  # PyYAML: with the first YAML body or answer
    (START, "server.machinery.codec.yamlparse", False),
    (START, "gateway.codecs.yamlwrite", False),
    (FIRST_YAML, "yaml", True),
    (FIRST_YAML, "server.machinery.codec.yamlparse", True),
    (FIRST_YAML, "gateway.codecs.yamlwrite", True),
    (START, "server.controllers.kubelets.simulator", False),  # the simulated nodes: with --nodes N
    (START, "server.controllers.kubelets.status", False),
    (START, "server.controllers.scheduler.model", False),  # with the simulated nodes or the scheduler
    (START, "jsonpath_ng", False),  # with the first CRD's printer columns
    (START, "storage.encryption", False),  # with --encryption-provider-config
    (START, "nacl", False),
    (START, "server.admission.config", False),  # with --admission-control-config-file
    (START, "server.admission.podsecurity.checks", False),  # with the first policy that is not privileged
    # the controllers that run only when named (--controllers), with their build
    (START, "server.controllers.deployment", False),
    (START, "server.controllers.statefulset", False),
    (START, "server.controllers.cronjob", False),
    (START, "server.controllers.scheduler.scheduler", False),
    (START, "server.controllers.endpointslices", True),  # a default one
    (FIRST_RULE, "cel.cel", True),
    (FIRST_RULE, "cel", False),
    (FIRST_RULE, "prompt_toolkit", False),
    (FIRST_RULE + "\nimport cel\nfrom server.machinery.crdschema.cel.engine import engine\n"
     "assert cel.compile is engine().compile", "cel", True),
    (TOOL, "capstan.cli.snapshot", True),
    (TOOL, "capstan.cli.commands", False),
    (TOOL, "aiohttp", False),
    (TOOL, "server.registry.resources", False),
    (TOOL, "server.kinds", False),
]


@pytest.mark.parametrize(("code", "module", "loaded"), CASES)
def test_start_imports(code: str, module: str, loaded: bool) -> None:
    assert _after(code)[module] is loaded
