"""OpenAPI v3 documents of the served API, as kube-apiserver publishes them at /openapi/v3.

documents.py builds them from the core's Discover answer: paths.py the operations of each resource,
schemas.py the component schemas from the protobuf descriptors (descriptions from comments.py, merge and
list markers from server/machinery/schema_hints.py), parameters.py the query parameters. The HTTP endpoints are in
gateway/handlers/openapi.py.
"""
