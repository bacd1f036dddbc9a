"""API machinery: wire formats and pure functions shared by the core and the gateway (the only part of server the
gateway imports)."""
