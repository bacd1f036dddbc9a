"""Validation whose messages must match kube-apiserver's byte for byte.

Clients (kubectl, client-go, the Python client) show these strings to people and
some match on them, so the text is part of the API: see `names` for the rules,
the `FieldError` value and the `Invalid` Status built from a list of them.
"""
