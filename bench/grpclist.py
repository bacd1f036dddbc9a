"""What paging an unpaged gRPC List to fit a default client costs: 12,000 ConfigMaps of 1 KiB listed over gRPC
as a client with default settings gets them (pages of at most 4 MiB, each with a continue token the client
follows) beside the same list as one answer to a client that takes 64 MiB and says so (max_response_bytes).

    python -m bench.grpclist              # 12,000 objects, 5 rounds, JSON and protobuf
    python -m bench.grpclist --quick      # 600 objects, 1 round

A core in this process (start_core over LMDB, plaintext gRPC on loopback) and a grpc.aio client on its own
channel per form. One JSON line per figure (bench/_util.py's shape); recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import grpc
import orjson

from bench._util import at_most, context, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

BIG = 64 * 1024 * 1024
PAYLOAD = "x" * 1024
CM = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default")
ENCODINGS = {"json": core_pb2.ENCODING_JSON, "protobuf": core_pb2.ENCODING_PROTOBUF}
GOAL_RATIO = 1.25  # paged / one answer: pages cost at most a quarter more than one message


async def _list(stub: core_pb2_grpc.CoreServiceStub, accept: core_pb2.Encoding, max_bytes: int) -> tuple[int, int]:
    """(items, pages) of the whole collection, following continue tokens."""
    options: dict[str, str] = {}
    items = pages = 0
    while True:
        response = await stub.List(core_pb2.ListRequest(path=CM, accept=accept, options=options,
                                                        max_response_bytes=max_bytes))
        items, pages = items + len(response.items), pages + 1
        token = getattr(response.metadata, "continue")
        if not token:
            return items, pages
        options = {"continue": token}


async def run(objects: int, rounds: int) -> bool:
    """Print the figures; False when a list did not hold every object."""
    ok = True
    with tempfile.TemporaryDirectory() as root:
        store = await LmdbStore.open(Path(root) / "lmdb", StoreOptions(sync=False, compact_interval=0))
        core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                namespace_controllers=False)
        address = f"127.0.0.1:{core.grpc_port}"
        try:
            async with grpc.aio.insecure_channel(address) as default, \
                    grpc.aio.insecure_channel(address, options=[("grpc.max_receive_message_length", BIG)]) as big:
                paged_stub = core_pb2_grpc.CoreServiceStub(default)  # type: ignore[no-untyped-call]
                whole_stub = core_pb2_grpc.CoreServiceStub(big)  # type: ignore[no-untyped-call]
                note(f"creating {objects} ConfigMaps of 1 KiB")
                for start in range(0, objects, 200):
                    await asyncio.gather(*(paged_stub.Create(core_pb2.CreateRequest(path=CM, object=core_pb2.RawObject(
                        encoding=core_pb2.ENCODING_JSON,
                        data=orjson.dumps({"metadata": {"name": f"cm-{i:05}"}, "data": {"payload": PAYLOAD}}))))
                        for i in range(start, min(start + 200, objects))))
                for form, accept in ENCODINGS.items():
                    times: dict[str, list[float]] = {"one answer": [], "paged": []}
                    pages = 0
                    for _ in range(rounds):  # alternating, so load on the shared machine falls on both alike
                        for impl, stub, max_bytes in (("one answer", whole_stub, BIG), ("paged", paged_stub, 0)):
                            began = time.perf_counter()
                            items, count = await _list(stub, accept, max_bytes)
                            times[impl].append(time.perf_counter() - began)
                            ok &= items == objects
                            if impl == "paged":
                                pages = count
                    whole, paged = statistics.median(times["one answer"]), statistics.median(times["paged"])
                    op = f"list-{objects}-{form}"
                    emit(op, "one answer (64 MiB client)", "seconds", whole, context("anchor"), correct=ok,
                         rounds=rounds)
                    emit(op, "paged (default client)", "seconds", paged, context("4 MiB pages"), correct=ok,
                               rounds=rounds, pages=pages)
                    emit(op, "paged / one answer", "ratio", paged / whole, at_most(GOAL_RATIO, "x"), correct=ok)
        finally:
            await core.stop()
            await store.close()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=12_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="600 objects, 1 round")
    args = parser.parse_args()
    objects, rounds = (600, 1) if args.quick else (args.objects, args.rounds)
    sys.exit(0 if asyncio.run(run(objects, rounds)) else 1)


if __name__ == "__main__":
    main()
