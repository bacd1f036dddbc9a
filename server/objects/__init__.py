"""Object semantics, one verb per module, shared by every kind: what kube-apiserver's generic registry does."""
