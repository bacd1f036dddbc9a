"""The commands that serve nothing: `capstan kubeconfig`, `console`, `envtest-assets`, `snapshot`, `check`,
`defrag`, and `capstan --version`. Each reads or writes files, or asks a running server as a client; none needs
the server's modules, whose imports cost a serving command ~0.6 s of CPU. launch.py runs them from here, each
importing only what it uses, so a script or a test calling `capstan kubeconfig` does not pay for a server start.

commands.py adds the same subcommands to its parser (`add_commands`), so `capstan --help` lists them and they
parse the same whichever way they are reached.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from capstan.cli import console as consoles
from capstan.cli import snapshot
from server.machinery import version as versions

COMMANDS = frozenset({"kubeconfig", "console", "envtest-assets", "snapshot", "check", "defrag"})


def handles(argv: Sequence[str]) -> bool:
    """Whether this command line is one of these commands (or `--version` alone); options before the subcommand
    belong to the serving commands' parser, so such a line is theirs."""
    return (bool(argv) and argv[0] in COMMANDS) or list(argv) == ["--version"]


def version_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=versions.describe(),
                        help="print Capstan's version and the Kubernetes version it implements, and exit")


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    kubeconfig = commands.add_parser("kubeconfig", help="print a kubeconfig for the running server")
    kubeconfig.add_argument("--data-dir", type=Path, default=Path("data"),
                            help="the server's data directory, to find its address (default ./data)")
    kubeconfig.add_argument("--server", default="", help="the server's address, e.g. https://127.0.0.1:6443")
    console = commands.add_parser("console", help="print the web console's one-time login URL for the admin")
    consoles.add_flags(console)
    assets = commands.add_parser(
        "envtest-assets", help="lay out a KUBEBUILDER_ASSETS directory whose kube-apiserver is Capstan (envtest)")
    assets.add_argument("dir", type=Path, help="the directory (created if need be); its path is printed")
    snapshot.add_commands(commands)


def main(argv: Sequence[str]) -> None:
    """Parse and run one of these commands (handles(argv) is true)."""
    parser = argparse.ArgumentParser(prog="capstan")
    version_flag(parser)
    add_commands(parser.add_subparsers(dest="command", required=True))
    run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> None:
    """Run a parsed command of these; exit 1 with the error's text when it fails."""
    if args.command == "kubeconfig":
        from capstan.cli import kubeconfig

        sys.stdout.write(kubeconfig.render(args.data_dir, args.server))
    elif args.command == "envtest-assets":
        from capstan.cli import envtest

        try:
            print(envtest.lay_out(args.dir, envtest.find_etcd()))
        except (envtest.AssetsError, OSError) as err:
            _fail(str(err))
    elif args.command == "console":
        import asyncio

        import aiohttp

        try:
            print(asyncio.run(consoles.login_url(args.data_dir, args.server, args.expiration)))
        except (consoles.ConsoleError, OSError, aiohttp.ClientError) as err:
            _fail(str(err), "capstan console")
    else:
        from storage import StorageError

        try:
            snapshot.run(args)
        except (StorageError, OSError) as err:
            _fail(str(err))


def _fail(message: str, program: str = "capstan") -> None:
    print(f"{program}: {message}", file=sys.stderr)
    sys.exit(1)
