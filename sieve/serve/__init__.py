"""`sieve serve`: an index's tools for any agent, over the Model Context Protocol.

`service` is protocol-free (sessions, the index argument, limits); `mcp_server` binds it to the
official `mcp` SDK (the `serve` extra), which only it imports.
"""

from sieve.serve.service import ServeLimits, Service, Session, index_names

__all__ = ["ServeLimits", "Service", "Session", "index_names"]
