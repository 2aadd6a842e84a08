"""The `sieve` command line: `main` (the parser and the one dispatch with its exit codes) and one
module per command group (`index`, `query`, `read`, `demo`, `agent`, `eval`, `serve`, `web`), which
share `common`. The groups never import `main`. The only package that may import everything.
"""
