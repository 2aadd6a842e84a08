"""Reading under a token ceiling: sections and their names (`sections`, `parts`), section fetch and
whole-document visit (`reading`), passages (`passages`), query-focused snippets (`snippets`) and the
token counters (`tokens`).
"""
