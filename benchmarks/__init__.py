"""sieve's benchmarks: numbers, not truths (those are in tests/). Run each as `python -m benchmarks.NAME`
from the repository root; benchmarks/README.md lists them."""
