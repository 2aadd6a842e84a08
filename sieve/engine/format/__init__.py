"""The on-disk format's codecs: checked array files (`storage`), the manifest and the commit
protocol (`commits`), the compressed document store (`store`), positions in blocks (`positions`
writes and reads the raw ones, `position_blocks` reads the blocks), id tables (`docids`),
attributes and dates (`attributes`), and the array primitives they share (`bitset`, `distinct`,
`ranges`, `weak`). Imports only `sieve.engine.analysis` below it (docs/index-format.md describes
the bytes).
"""
