"""The `capstan` command: starts the store, the gRPC core and the HTTP gateway in one process.

`capstan serve` is the single-process mode (everything a user needs for tests and
local platforms). It exits cleanly on SIGTERM or SIGINT: listeners stop first,
then acknowledged writes are committed and LMDB is closed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from capstan.inprocess import InProcessClient
from gateway.app import build_app, start_http
from server.app import start_core
from storage import StorageError, StoreOptions
from storage.lmdb import LmdbStore

log = logging.getLogger("capstan")


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="capstan", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run store, gRPC core and HTTP gateway in one process")
    serve.add_argument("--data-dir", type=Path, default=Path("data"), help="LMDB data directory (default ./data)")
    serve.add_argument("--listen", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--http-port", type=int, default=8080, help="HTTP gateway port (default 8080; 0 picks one)")
    serve.add_argument("--grpc-port", type=int, default=50051, help="gRPC core port (default 50051; 0 picks one)")
    serve.add_argument(
        "--sync",
        type=_bool,
        default=True,
        help="fsync every acknowledged write (default true). false is UNSAFE: for tests only,"
        " a crash may lose acknowledged writes",
    )
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    store = await LmdbStore.open(args.data_dir / "lmdb", StoreOptions(sync=args.sync))
    try:
        core = await start_core(store, listen=args.listen, grpc_port=args.grpc_port)
        app = build_app(InProcessClient(core.core), server_address=f"{args.listen}:{args.http_port}")
        runner, http_port = await start_http(app, args.listen, args.http_port)
        log.info(
            "capstan serving: HTTP http://%s:%d gRPC %s:%d data %s (revision %d)",
            args.listen, http_port, args.listen, core.grpc_port, args.data_dir, store.current_revision(),
        )
        await stop.wait()
        log.info("capstan shutting down")
        await runner.cleanup()
        await core.stop()
    finally:
        await store.close()


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except (StorageError, OSError) as err:
        print(f"capstan: {err}", file=sys.stderr)
        sys.exit(1)
