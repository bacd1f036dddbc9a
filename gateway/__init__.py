"""Capstan's HTTP gateway: Kubernetes REST translated onto the gRPC core. It never imports storage."""
