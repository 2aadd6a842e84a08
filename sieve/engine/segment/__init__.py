"""One segment and one snapshot: `reader` (a segment's memory-mapped arrays), `writer` (a new
segment from analysed batches, sorted by `runs` with `pages` advice), `snapshot` (a commit point's
segments and deletions). Built on `format` and `analysis`.
"""
