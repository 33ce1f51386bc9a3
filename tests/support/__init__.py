"""Test helpers shared by tests and benchmarks (loopback servers, scripted replies)."""
