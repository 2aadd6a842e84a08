"""`sieve eval`: convert and build collections, run episodes and grids, judge, report, and
measure retrieval. The options are in `commands`; the handlers in `build`, `run` and `report`.
"""
