"""The CEL engine's compiled core, loaded the first time a rule is compiled, without the package's REPL.

The `common-expression-language` distribution's package (`cel`) imports its command-line tool in its
`__init__`, and with it typer, rich and prompt_toolkit: ~0.15-0.25 s that a server pays at every start
though it only needs `compile` and `Context`, which live in the package's extension module `cel.cel`.
engine() loads that extension module by itself (registered as `cel.cel`, so a later `import cel`
finds it and re-exports the same objects), once, on the first CRD with x-kubernetes-validations; a server
without such CRDs never loads it. Where the extension is not found beside the package (another layout of
the distribution), the whole package is imported instead.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

PACKAGE = "cel"
CORE = "cel.cel"  # the Rust extension: compile, Context, the value types


@cache
def engine() -> ModuleType:
    """The module whose `compile(text)` and `Context(variables=..., functions=...)` evaluate CEL."""
    loaded = sys.modules.get(CORE)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec(PACKAGE)  # finds the package without running its __init__
    locations = (package.submodule_search_locations or []) if package is not None else []
    for location in locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(location) / f"cel{suffix}"
            if not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location(CORE, path)
            if spec is None or spec.loader is None:
                break
            module = importlib.util.module_from_spec(spec)
            sys.modules[CORE] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[CORE]
                raise
            return module
    import cel

    return cel
