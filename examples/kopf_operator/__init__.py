"""A worked example: a small kopf operator and its tests against Capstan through the pytest plugin."""
