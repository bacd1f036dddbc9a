"""The renderings cache (server/objects/render.py): shared renderings, bounded in entries and in bytes.

A cache of rendered objects bounded only by a count would hold count x object size: 16,384 renderings of
1 MiB objects are 16 GiB. Each row renders `count` objects of `size` bytes and checks what stays held.
"""

from __future__ import annotations

import orjson
import pytest

from server.kinds import BUILTIN
from server.machinery import stored
from server.objects import render
from server.registry.resources import Registry

FOUND = Registry(BUILTIN).get("", "v1", "configmaps")
assert FOUND is not None
CONFIG_MAPS = FOUND


def value(name: str, size: int) -> bytes:
    obj = {"metadata": {"name": name, "namespace": "default"}, "data": {"k": "x" * size}}
    return stored.pack(orjson.dumps(obj), b"")


@pytest.mark.parametrize(("count", "size", "entries", "max_bytes", "held_at_most"), [
    (100, 1_000, 16, 1 << 20, 16),  # the entry bound binds
    (100, 100_000, 1_000, 1 << 20, 10),  # the byte bound binds: ten 100 kB renderings in 1 MiB
    (3, 2 << 20, 1_000, 1 << 20, 0),  # a rendering larger than the whole bound is answered, not kept
])
def test_renderings_stay_within_both_bounds(count: int, size: int, entries: int, max_bytes: int,
                                            held_at_most: int) -> None:
    cache = render.Renderings(entries, max_bytes)
    for i in range(count):
        key, rendered_value = f"/core/configmaps/default/c{i}".encode(), value(f"c{i}", size)
        first = cache.item(CONFIG_MAPS, key, rendered_value, i + 1, render.JSON, False)
        assert orjson.loads(first)["metadata"] == {"resourceVersion": str(i + 1), "name": f"c{i}",
                                                   "namespace": "default"}
        assert cache.item(CONFIG_MAPS, key, rendered_value, i + 1, render.JSON, False) == first
        assert cache.held_bytes <= max_bytes
    assert len(cache._cache) <= held_at_most
    assert cache.held_bytes == sum(len(data) for data in cache._cache.values())
