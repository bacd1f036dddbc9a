"""Capstan's core: the resource registry, object semantics and the gRPC CoreService over a Store."""
