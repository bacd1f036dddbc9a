"""Structural schemas of custom resources, as apiextensions-apiserver has them.

    structural.py   the openAPIV3Schema as a tree the other modules walk (kube's structural schema)
    schemacheck.py  the structural-schema rules a CRD's schema must follow (kube's messages)
    prune.py        pruning of undeclared fields (reported as unknown fields) and `default:`s, in one pass
    values.py       OpenAPI value validation of an object, worded as kube-openapi words it
    formats.py      the string formats kube-openapi checks
    cel/            x-kubernetes-validations: CEL rules parsed, type-checked, costed and evaluated
"""
