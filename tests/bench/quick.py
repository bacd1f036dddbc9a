"""Running a benchmark at --quick sizes and reading its JSON lines, for the smoke tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_quick(module: str, *args: str) -> list[dict[str, Any]]:
    """`python -m <module> --quick <args>` from the repository root: it must exit 0; its stdout lines parsed."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--quick", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]
