"""The `capstan` command.

  capstan serve      store, gRPC core and HTTP gateway in one process (the default way to run)
  capstan core       store and gRPC core only, for gateways in other processes
  capstan gateway    an HTTP gateway in front of a core reached over gRPC (--core HOST:PORT)
  capstan kubeconfig a kubeconfig for the running server, for kubectl and client libraries

Every server exits cleanly on SIGTERM or SIGINT: listeners stop first, then
acknowledged writes are committed and LMDB is closed.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from capstan.inprocess import InProcessClient
from gateway.app import build_app, start_http
from gateway.transport.grpc import GrpcClient
from server.app import start_core
from server.kinds.services import DEFAULT_SERVICE_CLUSTER_IP_RANGE
from storage import StorageError, StoreOptions
from storage.lmdb import LmdbStore

log = logging.getLogger("capstan")

ENDPOINTS_FILE = "endpoints.json"  # written into the data dir by `serve`, read by `kubeconfig`


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def _store_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="data directory (default ./data)")
    parser.add_argument(
        "--sync", type=_bool, default=True,
        help="fsync every acknowledged write (default true). false is UNSAFE: for tests only,"
        " a crash may lose acknowledged writes",
    )


def _cidr(text: str) -> str:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _core_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--service-cluster-ip-range", type=_cidr, default=DEFAULT_SERVICE_CLUSTER_IP_RANGE, metavar="CIDR",
        help=f"the range Services' cluster IPs are allocated from (default {DEFAULT_SERVICE_CLUSTER_IP_RANGE}, "
        "as kube-apiserver's); its first address is the `kubernetes` Service's",
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="capstan", description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run store, gRPC core and HTTP gateway in one process")
    _store_flags(serve)
    serve.add_argument("--listen", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--http-port", type=int, default=8080, help="HTTP port (default 8080; 0 picks one)")
    serve.add_argument("--grpc-port", type=int, default=50051, help="gRPC port (default 50051; 0 picks one)")
    _core_flags(serve)

    core = commands.add_parser("core", help="run the store and the gRPC core only")
    _store_flags(core)
    core.add_argument("--listen", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    core.add_argument("--grpc-port", type=int, default=50051, help="gRPC port (default 50051; 0 picks one)")
    _core_flags(core)

    gateway = commands.add_parser("gateway", help="run an HTTP gateway in front of a core reached over gRPC")
    gateway.add_argument("--core", required=True, metavar="HOST:PORT", help="the core's gRPC address")
    gateway.add_argument("--listen", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    gateway.add_argument("--http-port", type=int, default=8080, help="HTTP port (default 8080; 0 picks one)")

    kubeconfig = commands.add_parser("kubeconfig", help="print a kubeconfig for the running server")
    kubeconfig.add_argument("--data-dir", type=Path, default=Path("data"),
                            help="the server's data directory, to find its address (default ./data)")
    kubeconfig.add_argument("--server", default="", help="the HTTP address, e.g. http://127.0.0.1:8080")
    return parser.parse_args(argv)


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def serve(args: argparse.Namespace) -> None:
    stop = _stop_event()
    store = await LmdbStore.open(args.data_dir / "lmdb", StoreOptions(sync=args.sync))
    try:
        core = await start_core(store, listen=args.listen, grpc_port=args.grpc_port,
                                service_cluster_ip_range=args.service_cluster_ip_range)
        app = build_app(InProcessClient(core.core), server_address=f"{args.listen}:{args.http_port}")
        runner, http_port = await start_http(app, args.listen, args.http_port)
        endpoints = {"http": f"http://{args.listen}:{http_port}", "grpc": f"{args.listen}:{core.grpc_port}"}
        (args.data_dir / ENDPOINTS_FILE).write_text(json.dumps(endpoints) + "\n")
        log.info("capstan serving: HTTP %s gRPC %s data %s (revision %d)",
                 endpoints["http"], endpoints["grpc"], args.data_dir, store.current_revision())
        await stop.wait()
        log.info("capstan shutting down")
        await runner.cleanup()
        await core.stop()
    finally:
        await store.close()


async def core(args: argparse.Namespace) -> None:
    stop = _stop_event()
    store = await LmdbStore.open(args.data_dir / "lmdb", StoreOptions(sync=args.sync))
    try:
        running = await start_core(store, listen=args.listen, grpc_port=args.grpc_port,
                                   service_cluster_ip_range=args.service_cluster_ip_range)
        log.info("capstan core serving: gRPC %s:%d data %s (revision %d)",
                 args.listen, running.grpc_port, args.data_dir, store.current_revision())
        await stop.wait()
        log.info("capstan core shutting down")
        await running.stop()
    finally:
        await store.close()


async def gateway(args: argparse.Namespace) -> None:
    stop = _stop_event()
    client = GrpcClient(args.core)
    try:
        app = build_app(client, server_address=f"{args.listen}:{args.http_port}")
        runner, http_port = await start_http(app, args.listen, args.http_port)
        log.info("capstan gateway serving: HTTP http://%s:%d core %s", args.listen, http_port, args.core)
        await stop.wait()
        log.info("capstan gateway shutting down")
        await runner.cleanup()
    finally:
        await client.close()


def kubeconfig(args: argparse.Namespace) -> str:
    server = args.server
    if not server:
        try:
            server = json.loads((args.data_dir / ENDPOINTS_FILE).read_text())["http"]
        except (OSError, ValueError, KeyError):
            server = "http://127.0.0.1:8080"
    return "\n".join([
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: capstan",
        "  cluster:",
        f"    server: {server}",
        "contexts:",
        "- name: capstan",
        "  context:",
        "    cluster: capstan",
        "    user: capstan",
        "    namespace: default",
        "current-context: capstan",
        "users:",
        "- name: capstan",
        "  user: {}",
        "",
    ])


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.command == "kubeconfig":
        sys.stdout.write(kubeconfig(args))
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run = {"serve": serve, "core": core, "gateway": gateway}[args.command]
    try:
        asyncio.run(run(args))
    except (StorageError, OSError) as err:
        print(f"capstan: {err}", file=sys.stderr)
        sys.exit(1)
