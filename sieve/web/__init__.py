"""`sieve web`: a read-only browser view of indexes (the `web` extra)."""

from sieve.web.app import WebLimits, create_app, serve

__all__ = ["WebLimits", "create_app", "serve"]
