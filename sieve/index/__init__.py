"""The index's life cycle: `build` (corpus to first segment), `writes` (adds, deletes, commits),
`merges`, `shards` and the shard service and Ray cluster behind them, and `Index` (`index.py`), the
opened index every caller uses. May import the engine, the corpus readers and `sieve.dense`.
"""
