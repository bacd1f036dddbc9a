"""Capstan: a Kubernetes-style API server whose native interface is gRPC."""
