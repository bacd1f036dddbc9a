"""The core: everything behind the CoreService, in layers that only point down (import-linter's `layers` contract
in pyproject.toml enforces the order; docs/architecture.md walks a request through them).

From the bottom:
    machinery/    wire formats and pure functions: codecs, schemas, selectors, validation, managed fields, patch,
                  Status errors, credentials' wire form, load shedding, the CoreService method table. The gateway
                  shares this layer and imports nothing else of server.
    callouts/     the client of every webhook the server calls (admission, CRD conversion)
    registry/     resources as data: what is served, each kind's strategy, Table columns, discovery
    objects/      the generic verbs over the store (kube's generic registry) and Core, which serves them
    crd/          CustomResourceDefinitions made into served resources
    runtime/      the controller runtime: informers, work queues, leader election, elected singletons
    auth/         authentication, authorization, impersonation, audit, service account tokens; the guard
    kinds/        the built-in kinds and their subresources
    admission/    the admission chain and its plugins, webhooks among them
    controllers/  the controllers, on the runtime
    service/      the gRPC service
    startup/      composition: what a core creates and starts
"""
