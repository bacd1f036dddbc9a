"""Custom resources: what a CustomResourceDefinition's schema means for the objects of its kind.

    structural.py   the openAPIV3Schema as a tree the other modules walk (kube's structural schema)
    definition.py   defaults and validation of the CustomResourceDefinition object itself
    schemacheck.py  the structural-schema rules a CRD's schema must follow (kube's messages)
    prune.py        pruning of undeclared fields (reported as unknown fields) and `default:`s, in one pass
    values.py       OpenAPI value validation of an object, worded as kube-openapi words it
    formats.py      the string formats kube-openapi checks
    columns.py      additionalPrinterColumns as Table columns (JSONPath)
    resource.py     a CRD version as a server.registry.resources.Resource
    protos.py       beyond Kubernetes: registered protobuf messages a CRD may name, to be served in protobuf

The controller that turns stored CRDs into served resources is server/controllers/crds.py; the schema
object the core uses for a custom resource is server/machinery/schema.py's JsonSchema.
"""
