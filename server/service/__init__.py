"""The gRPC service: the CoreService servicer and the server that carries it."""
