"""Custom resources: a CustomResourceDefinition made into served resources.

    definition.py   defaults and validation of the CustomResourceDefinition object itself
    columns.py      additionalPrinterColumns as Table columns (JSONPath)
    resource.py     a CRD version as a server.registry.resources.Resource

What a CRD's schema means for its objects (structural schemas, pruning, defaulting, value validation, formats,
CEL rules) is machinery shared with the gateway: server/machinery/crdschema/. The protobuf messages a CRD may
name are kept by server/objects/descriptors.py; the controller that turns stored CRDs into served resources is
server/controllers/crds.py.
"""
