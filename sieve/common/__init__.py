"""Foundation shared by every layer: ISO dates, JSON I/O (orjson), progress bars, terminal escaping,
packaged templates, and bounded reading of regular files. Imports only `sieve.errors`.
"""
