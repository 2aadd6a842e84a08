"""Corpora in: the document model and its validation (`documents`), the JSONL/BEIR/record formats
(`formats`), folders of text, Markdown and HTML files (`folders`; their parsing `markup` and
`frontmatter`) and the built-in demo collection (`demo`). Imports only `sieve.common` and
`sieve.errors`: nothing here knows the index.
"""
