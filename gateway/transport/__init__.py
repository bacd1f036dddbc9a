"""The two ways the gateway reaches the core: in-process, or over a gRPC channel."""
