"""Capstan for other projects' tests: the pytest plugin (plugin.py) and what it is built from — a throwaway
`capstan serve` (server.py), server-side apply of manifests (apply.py), namespaces and ServiceAccounts with
given RBAC (access.py), the request log read from the server's audit log (requestlog.py), the client of fault
injection (faults.py) — usable without pytest too.

Importing this package loads nothing heavy: the kubernetes client is imported by the modules that need it.
"""
