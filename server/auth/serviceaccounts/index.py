"""Which ServiceAccounts, Pods and Secrets exist, by namespace and name: what a service account token's
check needs on every request, kept current by informers (server/runtime/informer.py) rather than read from
the store per request (kube's authenticator reads informer listers the same way).

Only what the checks read is kept: uid and deletionTimestamp (an object being deleted stops vouching for tokens
once its deletion time has passed, as kube's validator decides), and of a service account token Secret the
SHA-256 of its token and its last-used label (legacy.py), which a secret-based token is checked against.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from server.auth.serviceaccounts import legacy


@dataclass(frozen=True, slots=True)
class Entry:
    uid: str
    deletion_timestamp: str = ""  # RFC 3339 as stored; "" when not being deleted
    token: bytes = b""  # a service account token Secret's: legacy.digest of its token (b"" without one)
    last_used: str = ""  # a service account token Secret's legacy.LAST_USED_LABEL


def entry_of(obj: dict[str, Any]) -> Entry:
    """What the informers cache of an object (their transform)."""
    m = obj.get("metadata") or {}
    uid, deleting = str(m.get("uid", "")), str(m.get("deletionTimestamp") or "")
    if obj.get("type") != legacy.SECRET_TYPE:
        return Entry(uid, deleting)
    token = b""
    encoded = (obj.get("data") or {}).get(legacy.TOKEN_KEY)
    if isinstance(encoded, str) and encoded:
        try:
            token = legacy.digest(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            token = b""
    return Entry(uid, deleting, token, str((m.get("labels") or {}).get(legacy.LAST_USED_LABEL, "")))
