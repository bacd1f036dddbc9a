"""Patch engines: strategic merge patch (server/machinery/patch/strategic.py) and JSON merge patch
(server/machinery/patch/merge.py), pure functions over objects in their Kubernetes JSON form."""
