"""Benchmarks: one `bench_*.py` per topic, each comparing against a baseline measured in the same run."""
