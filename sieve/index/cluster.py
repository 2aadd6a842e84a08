"""Connecting to Ray, for what runs past one machine: sharded indexes served by actors
(sieve.index.shards) and evaluation episodes spread over workers (sieve.eval.distributed).

Ray is the optional `ray` extra; nothing else in sieve imports it. An address is what `ray.init`
takes (`HOST:PORT` of a running cluster's head, `auto` for the one this machine has joined), or
`local` to start a private cluster inside this process (what the tests use). A process joins one
cluster: asking for another while connected is an error, not a silent switch.

A private cluster listens on loopback only: its GCS, raylet, object manager, workers, agents and
this process's own Ray server bind 127.0.0.1, no dashboard; `connect` refuses one that came up
elsewhere. A real cluster is another matter: Ray trusts its network (anyone who can reach the
cluster's ports can run code on its nodes), so it belongs on a private network; joining one says so
on stderr, with the address this process then serves Ray on.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sieve.errors import ClusterError, InvalidArgumentError, extra_hint

LOCAL = "local"
PROBE_SECONDS = 5.0  # Ray itself waits minutes on an address where nothing listens
LOOPBACK = "127.0.0.1"
TRUST = (
    "Ray trusts its network: anyone who can reach the cluster's ports can run code on its nodes, "
    "so keep the cluster on a private network"
)
ADDRESS_HELP = (
    "HOST:PORT of a cluster's head, auto (the cluster this machine joined), or local (a "
    f"private cluster on this machine, listening on loopback only); the `ray` extra. {TRUST}"
)
# Ray's switch for "this node is not part of a cluster" (its default on macOS and Windows): only
# then does it give a node the loopback address; ray.init(_node_ip_address="127.0.0.1") is turned
# into the outward address. Every Ray server binds its node's address (loopback -> 127.0.0.1 only).
_NO_CLUSTER = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_joined: dict[str, str] = {}  # the address this process connected to, as asked


def ray_module() -> Any:
    """The `ray` package, or a ClusterError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterError(f"Ray is not installed: {extra_hint('ray')}") from None
    return ray


def connect(address: str) -> Any:
    """Join the Ray cluster at `address` (see the module docstring) once per process; returns `ray`.
    Raises ClusterError when it cannot be reached."""
    if not isinstance(address, str) or not address.strip():
        raise InvalidArgumentError(
            f"a Ray address is HOST:PORT, 'auto' or '{LOCAL}', got {address!r}"
        )
    ray = ray_module()
    if ray.is_initialized():
        joined = _joined.get("address")
        if joined is not None and joined != address:
            raise ClusterError(
                "this process is connected to the Ray cluster "
                f"at {joined}; it cannot also join {address}"
            )
        return ray
    if address not in (LOCAL, "auto"):
        _probe(address)
    options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    try:
        if address == LOCAL:
            # SIEVE_RAY_CPUS and SIEVE_RAY_RESOURCES (JSON, e.g.
            # {"sieve_shard_0": 1}) shape the private cluster.
            cpus = int(os.environ.get("SIEVE_RAY_CPUS", "0")) or os.cpu_count() or 1
            resources = json.loads(os.environ.get("SIEVE_RAY_RESOURCES") or "{}")
            # address="local": a RAY_ADDRESS in the environment
            # never turns this into joining a cluster
            with _loopback_node(ray):
                ray.init(
                    address=LOCAL,
                    num_cpus=cpus,
                    resources=resources,
                    include_dashboard=False,
                    object_store_memory=256 * 1024 * 1024,
                    **options,
                )
        else:
            ray.init(address=address, **options)
    except Exception as e:  # ray raises ConnectionError, RuntimeError, or its own kinds
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {type(e).__name__}: {e}"
        ) from e
    node = ray.util.get_node_ip_address()
    if address == LOCAL and node != LOOPBACK:
        ray.shutdown()
        raise ClusterError(
            f"the private Ray cluster came up on {node}, not {LOOPBACK}, so its servers would "
            "listen beyond this machine; "
            f"it was stopped (this Ray version ignores {_NO_CLUSTER}=0): use a cluster you run "
            "yourself (--ray HOST:PORT)"
        )
    if address != LOCAL:
        print(
            f"sieve: joined the Ray cluster at {address}; "
            f"this process serves Ray on {node}. {TRUST}.",
            file=sys.stderr,
        )
    _joined["address"] = address
    return ray


@contextmanager
def _loopback_node(ray: Any) -> Iterator[None]:
    """Ray starts its node on loopback while this lasts. The variable reaches the processes Ray
    starts (raylet, agents, and through the raylet its workers); Ray read it when it was imported,
    so its module constant is set too, and both are put back after."""
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    saved_env, saved_const = (
        os.environ.get(_NO_CLUSTER),
        getattr(constants, "ENABLE_RAY_CLUSTER", None),
    )
    os.environ[_NO_CLUSTER] = "0"
    if constants is not None and saved_const is not None:
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if saved_env is None:
            os.environ.pop(_NO_CLUSTER, None)
        else:
            os.environ[_NO_CLUSTER] = saved_env
        if constants is not None and saved_const is not None:
            constants.ENABLE_RAY_CLUSTER = saved_const


def _probe(address: str) -> None:
    """A HOST:PORT where nothing listens is a ClusterError within
    seconds, not after Ray's retries."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return  # not HOST:PORT: Ray says what is wrong with it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS).close()
    except OSError as e:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: "
            f"{e.strerror or e} (is `ray start --head` running there?)"
        ) from None
