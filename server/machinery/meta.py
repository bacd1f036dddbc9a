"""ObjectMeta helpers the verbs share: server-set fields, names, timestamps."""

from __future__ import annotations

import random
import time
from typing import Any

from server.machinery.values import Obj

# apimachinery's name generator alphabet: no vowels (no words), no confusable 0/1/3.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LENGTH = 5

# The order kube-apiserver prints ObjectMeta in; stored JSON follows it.
META_ORDER = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
)


def meta(obj: Obj) -> dict[str, Any]:
    """obj["metadata"], created if missing or not an object."""
    value = obj.get("metadata")
    if not isinstance(value, dict):
        value = obj["metadata"] = {}
    return value


_last_second = -1
_last_text = ""


def now() -> str:
    """The current time as Kubernetes prints metav1.Time: RFC 3339, seconds, UTC (formatted once a second)."""
    global _last_second, _last_text
    second = int(time.time())
    if second != _last_second:
        _last_second, _last_text = second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    return _last_text


# uids and generated names need uniqueness, not secrecy; os.urandom costs ~40 µs a call here.
_random = random.Random()


def new_uid() -> str:
    """A random (version 4) UUID in its canonical text form."""
    h = "%032x" % (_random.getrandbits(128) & ~(0xF000 << 64 | 0xC000 << 48) | (0x4000 << 64) | (0x8000 << 48))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def generate_name(prefix: str) -> str:
    return prefix + "".join(_random.choices(_ALPHABET, k=GENERATED_SUFFIX_LENGTH))


def canonical(obj: Obj) -> Obj:
    """The object with "metadata" first and its keys in Kubernetes order (stored JSON needs it first)."""
    metadata = meta(obj)
    ordered = {k: metadata[k] for k in META_ORDER if k in metadata}
    ordered.update((k, v) for k, v in metadata.items() if k not in ordered)
    out: Obj = {"metadata": ordered}
    out.update((k, v) for k, v in obj.items() if k not in ("metadata", "kind", "apiVersion"))
    return out


def body_without_meta_and_status(obj: Obj) -> Obj:
    """What metadata.generation tracks: everything but metadata, status and type."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}
