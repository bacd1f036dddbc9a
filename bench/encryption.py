"""What encryption at rest costs a Secret write and read, per provider, beside identity and no encryption.

    python -m bench.encryption [--quick] [--only write,read,cipher] [--impls none,identity,aescbc,...]

Impls, all over one LMDB store (fsync off, so the figures are CPU, not the disk's wait):
  none       the LMDB store itself, no EncryptedStore
  identity   an EncryptedStore whose configuration lists Secrets with identity only (the wrapper's own cost)
  aescbc, aesgcm, secretbox   Secrets under that provider with a 32-byte key
  kms        Secrets under a KMS v2 provider whose plugin (tests/storage/kms_plugin.py, a real gRPC server on
             a unix socket in this process) encrypted the one DEK every write uses

Workloads, each impl in turn, round by round, the order rotating; the median of the rounds:
  write   CPU µs per create of a Secret's stored value (~1.3 KiB: its JSON and protobuf renderings)
  read    CPU µs per get of those Secrets through a second EncryptedStore over the same store, so every read
          decrypts (the first store remembers what it wrote: its own reads and watch events decrypt nothing)
  cipher  CPU µs per encryption and per decryption by the provider's chain alone, no store

Stdout is one JSON line per figure (bench/_util.py); progress goes to stderr. The headline is `added_us`, the
CPU an impl adds to the store's own (`none`) per write and read; the goal for every encrypting provider is at
most 5% of what the request costs a served Capstan anyway (docs/performance.md, bench.security's insecure
rows: ~540 µs of server CPU a create, ~167 µs a GET): 27 µs a write, 8.4 µs a read.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import at_most, check_choices, context, emit, note
from storage import Store, StoreOptions
from storage.encryption import EncryptedStore, Encryption
from storage.lmdb import LmdbStore
from tests.storage.kms_plugin import KmsPlugin

IMPLS = ("none", "identity", "aescbc", "aesgcm", "secretbox", "kms")
OPS = ("write", "read", "cipher")
KEY = base64.b64encode(bytes(range(32))).decode()
REQUEST_CPU_US = {"write": 540.0, "read": 167.0}  # a served create and GET (bench.security, insecure HTTP)
GOAL_SHARE = 0.05  # what encryption may add to a request's CPU


def secret_value() -> bytes:
    """A Secret's stored value: ~1.3 KiB, a JSON rendering with a 512-byte payload and a protobuf beside it."""
    payload = base64.b64encode(os.urandom(384)).decode()
    body = ('{"metadata":{"name":"db","namespace":"default","uid":"0f3c5a56-3b7e-4c37-9b36-3d1c6d2e8f10",'
            '"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"web"}},"type":"Opaque",'
            f'"data":{{"password":"{payload}"}}}}')
    return body.encode() + b"\x00" + os.urandom(len(body) // 2)


def configuration(impl: str, plugin: KmsPlugin) -> str:
    provider = {
        "identity": "identity: {}",
        "kms": f"kms: {{apiVersion: v2, name: bench, endpoint: '{plugin.endpoint}'}}",
    }.get(impl, f"{impl}: {{keys: [{{name: k1, secret: {KEY}}}]}}")
    return ("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            f"- resources: [secrets]\n  providers:\n  - {provider}\n")


async def wrap(inner: Store, impl: str, config: Path) -> Store:
    if impl == "none":
        return inner
    return EncryptedStore(inner, await Encryption.open(config))


async def one_round(impl: str, count: int, base: Path, plugin: KmsPlugin, value: bytes) -> dict[str, float]:
    path = Path(tempfile.mkdtemp(dir=base))
    config = path / "encryption.yaml"
    config.write_text(configuration(impl, plugin))
    inner = await LmdbStore.open(path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    writer = await wrap(inner, impl, config)
    keys = [f"/core/secrets/default/s{i}".encode() for i in range(count)]
    start = time.process_time()
    for key in keys:
        await writer.create(key, value)
    write = (time.process_time() - start) / count
    reader = await wrap(inner, impl, config)
    await reader.get(keys[0])  # a KMS reader's one Decrypt of the DEK, before the clock
    start = time.process_time()
    for key in keys:
        await reader.get(key)
    read = (time.process_time() - start) / count
    figures = {"write": write * 1e6, "read": read * 1e6}
    if isinstance(writer, EncryptedStore):
        chain = writer.encryption.chain(keys[0])
        sealed = chain.to_storage(value, keys[0])
        start = time.process_time()
        for _ in range(count):
            chain.to_storage(value, keys[0])
        figures["encrypt"] = (time.process_time() - start) / count * 1e6
        start = time.process_time()
        for _ in range(count):
            chain.from_storage(sealed, keys[0])
        figures["decrypt"] = (time.process_time() - start) / count * 1e6
    if isinstance(reader, EncryptedStore):
        await reader.encryption.close()
    await writer.close()
    return figures


async def main(args: argparse.Namespace) -> int:
    count = 300 if args.quick else args.count
    rounds = 2 if args.quick else 5
    value = secret_value()
    impls = [impl for impl in IMPLS if impl in args.impls]
    with tempfile.TemporaryDirectory() as tmp:
        plugin = KmsPlugin(Path(f"/tmp/capstan-bench-kms-{os.getpid()}.sock"))
        await plugin.start()
        try:
            results: dict[str, list[dict[str, float]]] = {impl: [] for impl in impls}
            for r in range(rounds):
                order = impls[r % len(impls):] + impls[: r % len(impls)]
                for impl in order:
                    note(f"round {r + 1}/{rounds}: {impl}")
                    results[impl].append(await one_round(impl, count, Path(tmp), plugin, value))
        finally:
            await plugin.stop()
            plugin.socket.unlink(missing_ok=True)
    ok = True
    median = {impl: {k: statistics.median(f[k] for f in figs) for k in figs[0]} for impl, figs in results.items()}
    plain = median.get("none")
    for op in ("write", "read"):
        if op not in args.only:
            continue
        for impl in impls:
            figure = median[impl][op]
            added = figure - plain[op] if plain else figure
            goal = (at_most(round(REQUEST_CPU_US[op] * GOAL_SHARE, 1), "us") if impl not in ("none", "identity")
                    else context("the wrapper alone" if impl == "identity" else "the store"))
            ratio = round(figure / plain[op], 3) if plain else None
            ok &= emit(op, impl, "added_us", added, goal, cpu_us=round(figure, 3), vs_none=ratio, secrets=count,
                       rounds=rounds, value_bytes=len(value))
    if "cipher" in args.only:
        for impl in impls:
            if "encrypt" in median[impl]:
                emit("cipher", impl, "encrypt_us", median[impl]["encrypt"], context("the chain alone"),
                     decrypt_us=round(median[impl]["decrypt"], 3), value_bytes=len(value))
    return 0


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(OPS), help=f"workloads ({','.join(OPS)})")
    parser.add_argument("--count", type=int, default=5000, help="Secrets per round (default 5000)")
    parser.add_argument("--impls", default=",".join(IMPLS), help=f"implementations ({','.join(IMPLS)})")
    args = parser.parse_args()
    check_choices(parser, args, only=OPS, impls=IMPLS)
    args.only = args.only.split(",")
    args.impls = args.impls.split(",")
    return args


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
