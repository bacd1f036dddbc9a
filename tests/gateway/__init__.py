"""Tests of the HTTP gateway's pure parts: negotiation and codecs."""
