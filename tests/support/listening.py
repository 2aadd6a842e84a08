"""The TCP sockets a tree of processes listens on, read from /proc (Linux): what a test asserts
about which addresses a server exposes, measured rather than taken from its options."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"  # the TCP state column of /proc/net/tcp{,6}


@dataclass(frozen=True)
class Listener:
    pid: int
    command: str  # /proc/PID/comm: the first 15 characters
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        ip = ipaddress.ip_address(self.address)
        mapped = getattr(ip, "ipv4_mapped", None)  # a dual-stack socket bound to ::ffff:127.0.0.1
        return (mapped or ip).is_loopback

    def __str__(self) -> str:
        ip = ipaddress.ip_address(self.address)
        mapped = getattr(ip, "ipv4_mapped", None)
        shown = f"[::ffff:{mapped}]" if mapped else f"[{ip}]" if ip.version == 6 else str(ip)
        return f"{self.command}[{self.pid}] {shown}:{self.port}"


def descendants(root: int) -> list[int]:
    """`root` and every process below it (by parent id)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _address(hex_address: str) -> str:
    """/proc/net/tcp{,6} print addresses as 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    return str(ipaddress.ip_address(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))))


def listeners(pids: list[int]) -> list[Listener]:
    """Every listening TCP socket (IPv4 and IPv6) held open by one of `pids`."""
    sockets: dict[int, tuple[str, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == LISTEN:
                host, port = cols[1].split(":")
                sockets[int(cols[9])] = (_address(host), int(port, 16))
    found = []
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/comm").read_text().strip()
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = int(target[8:-1])
                if inode in sockets:
                    found.append(Listener(pid, command, *sockets[inode]))
    return sorted(set(found), key=lambda x: (x.command, x.pid, x.port))
