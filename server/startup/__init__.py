"""Composition of the core: what is created and started when a core starts."""
