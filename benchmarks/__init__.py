"""Throughput and quality benchmarks; ``python -m benchmarks --list`` shows them."""
