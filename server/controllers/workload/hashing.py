"""The hashes workload controllers name things by (kube's pkg/controller/controller_utils.go ComputeHash,
controller/history HashControllerRevision, apimachinery's rand.SafeEncodeString).

kube hashes a template by printing the Go struct with %#v (DeepHashObject) into FNV-32a; that text cannot be
reproduced outside Go, so these hash the template's canonical JSON (keys sorted, no spaces) instead: the same
template always gives the same hash, a different one (almost always) another, and the hash is encoded with
kube's alphabet, so names look like kube's (`web-5d4f8c7b9x`) without being byte-equal to them.
"""

from __future__ import annotations

import struct

import orjson

from server.controllers.workload.keyed import Obj

ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet: no vowels, no 0, 1, 3
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv32a(data: bytes, start: int = _FNV_OFFSET) -> int:
    h = start
    for byte in data:
        h ^= byte
        h = (h * _FNV_PRIME) & 0xFFFFFFFF
    return h


def fnv32(data: bytes, start: int = _FNV_OFFSET) -> int:
    h = start
    for byte in data:
        h = (h * _FNV_PRIME) & 0xFFFFFFFF
        h ^= byte
    return h


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each character mapped into ALPHANUMS by its code point."""
    return "".join(ALPHANUMS[ord(c) % len(ALPHANUMS)] for c in text)


def canonical(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def compute_hash(template: Obj, collision_count: int | None = None) -> str:
    """ComputeHash: the pod-template-hash of a template (and a collisionCount, written as kube writes it: its
    uint32 in eight little-endian bytes)."""
    h = fnv32a(canonical(template))
    if collision_count is not None:
        h = fnv32a(struct.pack("<II", collision_count & 0xFFFFFFFF, 0), h)
    return safe_encode(str(h))


def hash_revision(data: object, probe: int | None = None) -> str:
    """HashControllerRevision: FNV-32 of the revision's data (and the probe, written in decimal)."""
    h = fnv32(canonical(data))
    if probe is not None:
        h = fnv32(str(probe).encode(), h)
    return safe_encode(str(h))
