"""Security in the core: who is calling (authentication), what they may do (authorization), and the record
of what they did (audit).

Every CoreService call, over gRPC or from the in-process gateway, passes through one chain (guard.py) in
kube-apiserver's order: authentication -> audit -> impersonation -> authorization -> the verb. The gateway
never decides: it forwards the caller's credentials, and the core answers 401/403 the same way to both.
"""
