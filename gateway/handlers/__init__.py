"""HTTP handlers, one verb per module: parse -> negotiate -> call the core -> encode."""
