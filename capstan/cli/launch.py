"""The `capstan` console script: supervise the workers when asked for several (workers.py), else start again under
the allocator allocator.py chooses and run the command,
with Capstan's own `server`, `gateway` and `storage` claimed first (ownpackages.py) so that no package of the
caller's with one of those names is imported in their place.

The command's modules (commands.py and every layer below it) are imported only after that step, so starting
again costs one interpreter start, not the server's imports.

The cyclic garbage collector is off from then until the server has started (gcpolicy.after_start collects
once and turns it on): what start-up allocates (modules, schemas, the registry) lives as long as the
process, so the ~240 collections the imports would trigger, two of them full, find almost nothing to free
and cost ~30-50 ms of every start. What the imports made is frozen as soon as they are done, so that
after_start's collection walks only what the start itself made (~1.5 ms instead of ~50-70 ms over ~120,000
objects). The imports' own garbage, ~1,750 objects and ~0.4 MB (mostly classes that dataclass(slots=True)
and attrs built and replaced), is frozen with them and stays for the life of the process.
"""

from __future__ import annotations

import gc
import sys

from capstan.cli import allocator, ownpackages, workers


def main() -> None:
    # With --workers N > 1 this process supervises the workers, then exits. It serves nothing, so it stays under
    # CPython's allocator and starts the workers under the one allocator.py chooses: no exec of its own first.
    environ = allocator.planned(sys.argv[1:])
    workers.supervise(sys.argv[1:], environ)
    allocator.start_again_under(environ)
    ownpackages.claim()  # `server`, `gateway`, `storage`: Capstan's, whatever the caller's cwd or PYTHONPATH holds
    from capstan.cli import tools

    if tools.handles(sys.argv[1:]):  # a command that serves nothing: none of the server's imports
        tools.main(sys.argv[1:])
        return
    gc.disable()
    _import_aiohttp()
    from capstan.cli.commands import main as run

    gc.freeze()
    run()


def kube_apiserver() -> None:
    """The `capstan-kube-apiserver` script (and a KUBEBUILDER_ASSETS directory's `kube-apiserver`): `capstan
    kube-apiserver` under the name it was started as."""
    words = sys.argv[1:]
    if not {"-h", "--help", "--version"} & {word.partition("=")[0] for word in words}:
        allocator.start_again(["kube-apiserver", *words])
    gc.disable()
    _import_aiohttp()
    from capstan.cli.kubeapiserver import main as run
    from capstan.cli.kubeapiserver import program_name

    gc.freeze()
    run(words, program=program_name())


def _import_aiohttp() -> None:
    """aiohttp first, without its fallback contexts parsing the CA bundle (sslimport.py); imported here, not at the
    top, because the parent of several workers never gets this far and imports only the standard library."""
    from capstan.cli import sslimport

    sslimport.import_aiohttp()
