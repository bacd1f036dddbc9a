"""Patch engines: strategic merge patch (server/patch/strategic.py) and JSON merge patch
(server/patch/merge.py), pure functions over objects in their Kubernetes JSON form."""
