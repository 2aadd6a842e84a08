"""The index's life cycle: `build` (corpus to segments, with `options.BuildOptions`), `writes`
(adds, deletes, commits: `IndexWriter`), `merges`, `shards` and the shard service and Ray cluster
behind them, and `Index` (`index.py`), the opened index every caller uses, over what it shares
with the shard service (`opening`, `queries`). May import the engine, the corpus readers and
`sieve.dense`.
"""
