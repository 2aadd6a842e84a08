"""The Landlock sandbox's launcher: run as a script (`python -I -S jail.py CONFIG`), never imported.

Used by `sieve.tools.shell.sandbox` where bubblewrap is missing. It stays alive as the call's
supervisor: a child subreaper, so every process the command starts (a detached one included) remains
its descendant, and when the command's shell exits it kills whatever is left, so nothing outlives
the call. The shell itself runs in a child that, before `execve`:

- drops every capability and locks the securebits when started as root (Landlock confines the file
  system, not a root's other powers);
- sets no-new-privileges (setuid programs do not elevate) and a seccomp filter that refuses sockets
  of every family, io_uring, ptrace, bpf, perf events, user faults, key rings, mounts, namespace
  changes, and changes of files' modes, owners, times and attributes (Landlock before ABI 4 does
  not confine the network, no ABI confines connecting to a path-named Unix socket or changing a
  readable file's metadata, and before ABI 3 not truncating by path);
- restricts itself with a Landlock ruleset: read and execute under the system folders, read under
  the corpus folder, read and write under the scratch folder, the few device files a shell needs,
  no TCP, and (ABI 6+) no signals or abstract Unix sockets outside the sandbox. Nothing else of the
  file system can be opened, `/proc` included.

Standard library only, so the interpreter starts in milliseconds with `-I -S` (no `json`, whose
regular expressions would double that: the configuration is one argument, `sandbox.py`'s marshal of
it in hex, read by the same interpreter; sandbox.py also owns the rule list). A failure to set up
prints one line starting with `sieve-jail:` and exits 125 before the command runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import marshal
import os
import struct
import sys

SETUP_FAILED = 125
# the same on every Linux architecture; the `signal` module's enums cost milliseconds to import
_SIGKILL = 9

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int

# The three Landlock system calls have the same numbers on every architecture (the unified table).
_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Landlock file-system rights (linux/landlock.h), by the ABI that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
# what a rule on a file (not a folder) may grant
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

# What each named grant in the configuration means.
GRANTS = {
    "system": EXECUTE | READ_FILE | READ_DIR,
    "read": READ_FILE | READ_DIR,
    "scratch": READ_FILE
    | READ_DIR
    | WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_FIFO
    | REFER
    | TRUNCATE,
    "device": READ_FILE | WRITE_FILE,
}

_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER = 1, 38, 36
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
# keep-caps off and locked, no setuid fixup (locked), no root privileges on exec (locked)
_SECUREBITS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5)

# Refused system calls, by architecture: (audit arch, {name: number}).
_ARCHES = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "ptrace": 101,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "unshare": 272,
            "perf_event_open": 298,
            "setns": 308,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "bpf": 321,
            "userfaultfd": 323,
            "open_by_handle_at": 304,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            # metadata, which Landlock does not confine:
            # the corpus's modes, owners, times
            "truncate": 76,
            "chmod": 90,
            "fchmod": 91,
            "chown": 92,
            "fchown": 93,
            "lchown": 94,
            "utime": 132,
            "setxattr": 188,
            "lsetxattr": 189,
            "fsetxattr": 190,
            "removexattr": 197,
            "lremovexattr": 198,
            "fremovexattr": 199,
            "utimes": 235,
            "fchownat": 260,
            "futimesat": 261,
            "fchmodat": 268,
            "utimensat": 280,
            "fchmodat2": 452,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "ptrace": 117,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "unshare": 97,
            "perf_event_open": 241,
            "setns": 268,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "bpf": 280,
            "userfaultfd": 282,
            "open_by_handle_at": 265,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "setxattr": 5,
            "lsetxattr": 6,
            "fsetxattr": 7,
            "removexattr": 14,
            "lremovexattr": 15,
            "fremovexattr": 16,
            "truncate": 45,
            "fchmod": 52,
            "fchmodat": 53,
            "fchownat": 54,
            "fchown": 55,
            "utimensat": 88,
            "fchmodat2": 452,
        },
    ),
}


class SetupError(Exception):
    pass


def _check(result: int, what: str) -> int:
    if result < 0:
        raise SetupError(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 where Landlock is missing or disabled."""
    version = _libc.syscall(
        _LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


def handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def ruleset(abi: int, rules: list[tuple[str, str]]) -> int:
    """A Landlock ruleset's file descriptor granting `rules` ([(path, grant name)]) and nothing
    else."""
    fs = handled_fs(abi)
    attr = struct.pack("=Q", fs)
    if abi >= 4:
        # handled, never granted: no TCP at all
        attr += struct.pack("=Q", _NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        attr += struct.pack("=Q", _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = _check(
        _libc.syscall(
            _LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        ),
        "landlock_create_ruleset",
    )
    for path, grant in rules:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # a system folder this machine lacks (/lib32, /etc/alternatives...)
        try:
            access = GRANTS[grant] & fs
            if not os.path.isdir(path):
                access &= _FILE_RIGHTS
            rule = ctypes.create_string_buffer(struct.pack("=Qi", access, pfd), 12)
            _check(
                _libc.syscall(
                    _LANDLOCK_ADD_RULE,
                    ctypes.c_int(fd),
                    ctypes.c_int(_RULE_PATH_BENEATH),
                    rule,
                    ctypes.c_uint32(0),
                ),
                f"landlock_add_rule {path}",
            )
        finally:
            os.close(pfd)
    return fd


def seccomp_program(machine: str, numbers: list[int] | None = None, errno: int = 1) -> bytes | None:
    """A classic-BPF seccomp filter making the calls `numbers` (default: those in `_ARCHES`) fail
    with `errno` (EPERM), and killing a call of another architecture's ABI; None on an
    architecture without a table."""
    if machine not in _ARCHES:
        return None
    arch, calls = _ARCHES[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, refuse, kill = 0x7FFF0000, 0x00050000 | errno, 0x80000000
    numbers = sorted(set(calls.values() if numbers is None else numbers))
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    if machine == "x86_64":
        prog.append((jge, len(numbers) + 1, 0, 0x40000000))  # the x32 ABI: refused as a whole
    for i, nr in enumerate(numbers):
        prog.append((jeq, len(numbers) - i, 0, nr))
    prog += [(ret, 0, 0, allow), (ret, 0, 0, refuse)]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def install_seccomp(program: bytes) -> None:
    """Filter this process's (and its children's) system calls; needs no-new-privileges first."""
    count = len(program) // 8
    filt = ctypes.create_string_buffer(program, len(program))
    # struct sock_fprog, native alignment
    packed = struct.pack("@HP", count, ctypes.addressof(filt))
    fprog = ctypes.create_string_buffer(packed, len(packed))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0), "seccomp")


def _drop_root() -> None:
    """uid 0 without any capability: exec grants none back (securebits locked)."""
    _check(_libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS, 0, 0, 0), "securebits")
    for cap in range(64):
        # EINVAL: no such capability
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() != 22:
            raise SetupError(f"capability bounding set: {os.strerror(ctypes.get_errno())}")
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    os.setgroups([])  # while CAP_SETGID is still held
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # effective, permitted, inheritable: all zero, both words
    _check(
        _libc.syscall(
            126 if os.uname().machine == "x86_64" else 91,
            ctypes.create_string_buffer(header, 8),
            ctypes.create_string_buffer(data, 24),
        ),
        "capset",
    )


def _children(me: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me and fields[0] != b"Z":
                out.append(int(name))
    return out


def _reap_all(me: int) -> None:
    """Kill every process still ours (orphans were re-parented to us) until none is left."""
    while True:
        kids = _children(me)
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, _SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG if kids else 0)[0] > 0:
                pass
        except ChildProcessError:
            return


def main(argv: list[str]) -> int:
    config = marshal.loads(bytes.fromhex(argv[1]))
    _libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)  # sieve gone: so are we
    if os.getppid() != config["parent"]:
        return SETUP_FAILED  # sieve died before the line above
    try:
        abi = landlock_abi()
        if abi < 1:
            raise SetupError("Landlock is not available in this kernel")
        _check(_libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "child subreaper")
        rules = [(p, g) for p, g in config["rules"]]
        fd = ruleset(abi, rules)
        program = seccomp_program(os.uname().machine)
    except SetupError as e:
        print(f"sieve-jail: {e}", file=sys.stderr, flush=True)
        return SETUP_FAILED
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(config["cwd"])
            if os.geteuid() == 0:
                _drop_root()
            _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no-new-privileges")
            if program is not None:
                install_seccomp(program)
            _check(
                _libc.syscall(_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)),
                "landlock_restrict_self",
            )
            os.close(fd)
            os.execve(config["argv"][0], config["argv"], config["env"])
        except (SetupError, OSError) as e:
            os.write(2, f"sieve-jail: {e}\n".encode())
        os._exit(SETUP_FAILED)
    os.close(fd)
    me = os.getpid()
    status = 0
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if done == pid:
            break
    _reap_all(me)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
