"""Table columns of the core/v1 kinds beyond config (pods, services, nodes, ...), as kube-apiserver's
printers (pkg/printers/internalversion/printers.go) print them."""

from __future__ import annotations

from collections.abc import Mapping

from server.registry import Column

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {}
