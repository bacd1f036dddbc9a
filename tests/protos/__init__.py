"""Tests that the generated Kubernetes protobuf messages speak the Kubernetes wire format."""
