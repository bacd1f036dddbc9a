"""Table columns of the apps, batch, coordination, events and rbac kinds, as kube-apiserver's
printers (pkg/printers/internalversion/printers.go) print them."""

from __future__ import annotations

from collections.abc import Mapping

from server.registry import Column

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {}
