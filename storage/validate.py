"""Argument checks every backend applies the same way, so callers see one set of rules."""

from __future__ import annotations

from storage.errors import InvalidArgument
from storage.interface import MAX_KEY_SIZE


def check_key(key: object) -> bytes:
    if not isinstance(key, bytes):
        raise InvalidArgument(f"key must be bytes, not {type(key).__name__}")
    if not key:
        raise InvalidArgument("key must not be empty")
    if len(key) > MAX_KEY_SIZE:
        raise InvalidArgument(f"key is {len(key)} bytes; at most {MAX_KEY_SIZE} are allowed")
    return key


def check_value(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise InvalidArgument(f"value must be bytes, not {type(value).__name__}")
    return value


def check_prefix(prefix: object) -> bytes:
    if not isinstance(prefix, bytes):
        raise InvalidArgument(f"prefix must be bytes, not {type(prefix).__name__}")
    if len(prefix) > MAX_KEY_SIZE:
        raise InvalidArgument(f"prefix is {len(prefix)} bytes; at most {MAX_KEY_SIZE} are allowed")
    return prefix


def check_start_after(start_after: object) -> bytes | None:
    if start_after is None:
        return None
    if not isinstance(start_after, bytes):
        raise InvalidArgument(f"start_after must be bytes, not {type(start_after).__name__}")
    return start_after


def check_read_revision(revision: object) -> int | None:
    """None (latest) or a revision >= 1."""
    if revision is None:
        return None
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise InvalidArgument(f"revision must be an integer, not {type(revision).__name__}")
    if revision < 1:
        raise InvalidArgument(f"revision must be at least 1, not {revision}")
    return revision


def check_watch_revision(revision: object) -> int:
    """A watch starts after a revision >= 0 (0: from the beginning of retained history)."""
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise InvalidArgument(f"revision must be an integer, not {type(revision).__name__}")
    if revision < 0:
        raise InvalidArgument(f"revision must not be negative, not {revision}")
    return revision


def check_expected(revision: object) -> int | None:
    if revision is None:
        return None
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 1:
        raise InvalidArgument(f"expected_mod_revision must be a revision >= 1, not {revision!r}")
    return revision


def check_limit(limit: object) -> int | None:
    """None or 0 mean no limit."""
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise InvalidArgument(f"limit must be an integer, not {type(limit).__name__}")
    if limit < 0:
        raise InvalidArgument(f"limit must not be negative, not {limit}")
    return limit or None
