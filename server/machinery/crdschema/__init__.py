"""Structural schemas of custom resources: parsing, pruning, defaulting, value validation, formats and CEL rules, as
apiextensions-apiserver has them."""
