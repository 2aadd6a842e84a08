"""Connecting to Ray, for what runs past one machine: sharded indexes served by actors
(sieve.shards) and evaluation episodes spread over workers (sieve.eval.distributed).

Ray is the optional `ray` extra; nothing else in sieve imports it. An address is what `ray.init`
takes (`HOST:PORT` of a running cluster's head, `auto` for the one this machine has joined), or
`local` to start a private cluster inside this process (what the tests use). A process joins one
cluster: asking for another while connected is an error, not a silent switch.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from sieve.errors import ClusterError, InvalidArgumentError

LOCAL = "local"
PROBE_SECONDS = 5.0  # Ray itself waits minutes on an address where nothing listens
_joined: dict[str, str] = {}  # the address this process connected to, as asked


def ray_module() -> Any:
    """The `ray` package, or a ClusterError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterError("Ray is not installed: pip install 'sieve-search[ray]'") from None
    return ray


def connect(address: str) -> Any:
    """Join the Ray cluster at `address` (see the module docstring) once per process; returns `ray`.
    Raises ClusterError when it cannot be reached."""
    if not isinstance(address, str) or not address.strip():
        raise InvalidArgumentError(f"a Ray address is HOST:PORT, 'auto' or '{LOCAL}', got {address!r}")
    ray = ray_module()
    if ray.is_initialized():
        joined = _joined.get("address")
        if joined is not None and joined != address:
            raise ClusterError(f"this process is connected to the Ray cluster at {joined}; it cannot also join {address}")
        return ray
    if address not in (LOCAL, "auto"):
        _probe(address)
    options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    try:
        if address == LOCAL:
            # SIEVE_RAY_CPUS and SIEVE_RAY_RESOURCES (JSON, e.g. {"sieve_shard_0": 1}) shape the private cluster.
            cpus = int(os.environ.get("SIEVE_RAY_CPUS", "0")) or os.cpu_count() or 1
            resources = json.loads(os.environ.get("SIEVE_RAY_RESOURCES") or "{}")
            ray.init(num_cpus=cpus, resources=resources, include_dashboard=False, object_store_memory=256 * 1024 * 1024, **options)
        else:
            ray.init(address=address, **options)
    except Exception as e:  # ray raises ConnectionError, RuntimeError, or its own kinds
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {type(e).__name__}: {e}") from e
    _joined["address"] = address
    return ray


def _probe(address: str) -> None:
    """A HOST:PORT where nothing listens is a ClusterError within seconds, not after Ray's retries."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return  # not HOST:PORT: Ray says what is wrong with it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS).close()
    except OSError as e:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {e.strerror or e} (is `ray start --head` running there?)") from None
