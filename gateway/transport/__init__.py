"""The gRPC transport of the gateway's CoreClient (the in-process one is capstan/cli/inprocess.py)."""
