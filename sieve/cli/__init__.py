"""The `sieve` command line: `main` (indexing, queries, reading, checks, serving) and `agent` (ask and
eval). The only package that may import everything.
"""
