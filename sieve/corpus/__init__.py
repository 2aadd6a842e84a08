"""Corpora in: the document model and its validation (`documents`), the JSONL/BEIR/record formats
(`formats`), folders of text and Markdown files (`folders`, `frontmatter`) and the built-in demo
collection (`demo`). Imports only `sieve.common` and `sieve.errors`: nothing here knows the index.
"""
