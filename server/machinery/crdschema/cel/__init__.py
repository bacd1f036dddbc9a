"""x-kubernetes-validations: CEL rules on CRD schemas, as apiextensions-apiserver 1.28 compiles and runs them.

parse.py reads a rule into a tree (for checking and costing only); check.py types it against the schema
(kube's `undefined field` errors) and estimates its cost as cel-go's estimator does; library.py is kube's
CEL library; rules.py compiles a version's rules once and evaluates them on every write of a custom resource.
Evaluation itself is the `common-expression-language` engine (see pyproject for why), loaded by engine.py.
"""
