"""The agent's shell, attacked as a hostile model would: every command below runs for real, in each
sandbox this machine has, and must not read, write, reach or leave behind anything outside its
folder and scratch. The first attack round's findings are here (GNU long-option prefixes, files0
lists, `sed -f`, `/proc/PID/environ`, writes through `sort -o` and `sed -i`, hard links, memory
summed over many programs, 30,000 files, a detached process holding the output pipe), with the
variants a sandbox must also stop. Where no mechanism works, the refusal path is what runs."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from sandboxes import CONFINED, confined_params, without_sandboxes

import sieve
from sieve.errors import SandboxError
from sieve.tools.shell.episode import make_tools
from sieve.tools.shell.sandbox import Sandbox, ShellLimits, choose
from sieve.tools.shell.shell import run

SECRET = "TOPSECRET-7f3a9"


@pytest.fixture(params=confined_params())
def box(request: pytest.FixtureRequest) -> Sandbox:
    return choose(request.param)


@pytest.fixture()
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A corpus folder, a secret file and a secret environment variable beside it, a link out."""
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "gzip.txt").write_text("gzip\nThe gzip module compresses files.\nSee also zlib.\n")
    (root / "docs" / "json.txt").write_text("json\nJSON stands for JavaScript Object Notation.\n")
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    os.symlink(secret, root / "docs" / "link.txt")
    os.symlink(tmp_path, root / "up")
    monkeypatch.setenv("SIEVE_TEST_API_KEY", SECRET)  # as an API key in sieve's environment
    return {"root": root, "secret": secret, "outside": tmp_path / "pwned", "tmp": tmp_path, "pid": os.getpid()}


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `root`: content hash, mode, size and times (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else os.readlink(p) if p.is_symlink() else ""
            out[str(p.relative_to(root))] = (digest, st.st_mode, st.st_size, st.st_mtime_ns, st.st_nlink)
    return out


READS = [
    "cat {secret}",
    "cat ../secret.txt",
    "cat docs/../../secret.txt",
    "cat docs/link.txt",
    "cat up/secret.txt",
    "grep -r TOPSECRET . 2>&1",
    "grep -R TOPSECRET . 2>&1",
    "grep -rs TOPSECRET {tmp} /root /home /etc /var/tmp /tmp 2>&1 | head",
    "find / -name secret.txt 2>/dev/null | xargs cat 2>&1",
    "cat /proc/{pid}/environ",
    "tr '\\0' '\\n' < /proc/{pid}/environ",
    "cat /proc/{pid}/root{secret}",
    "cat /proc/{pid}/cwd/../secret.txt",
    "ls -l /proc/{pid}/fd/ 2>&1; cat /proc/{pid}/fd/* 2>&1 | head -c 2000",
    "cat /proc/1/environ /proc/self/environ; env",
    "printf '{secret}\\0' | sort --files0-from=-",
    "printf '{secret}\\0' | wc --files0-from=- && printf '{secret}\\0' | sort --files0=- 2>&1",
    "printf '{secret}\\0' | find -files0-from - -exec cat {{}} \\; 2>&1",
    "sed -f{secret} docs/gzip.txt",
    "sed -f ../secret.txt docs/gzip.txt",
    "grep -f {secret} -r / 2>/dev/null | head",
    "sort -S 1K --com=cat --files0=- <<< '{secret}' 2>&1",
    "python3 -c 'print(open(\"{secret}\").read())' 2>&1",
    "perl -ne print {secret} 2>&1",
    "awk 1 {secret} 2>&1",
    "cp {secret} $TMPDIR/x 2>&1; cat $TMPDIR/x",
    "ln {secret} $TMPDIR/h 2>&1; cat $TMPDIR/h",
    "ln -s {secret} $TMPDIR/s; cat $TMPDIR/s",
    "cd / && cat .{secret}",
    "cat /etc/shadow /etc/passwd /root/.bash_history 2>&1 | head",
    "dd if={secret} 2>&1",
    "tar cf - {tmp} 2>&1 | strings | grep TOP",
    # Gaining privileges first: a user namespace, a mount, a setuid program.
    "unshare -r cat {secret} 2>&1",
    "unshare -rm sh -c 'mount --bind {tmp} $TMPDIR && cat $TMPDIR/secret.txt' 2>&1",
    "su -c 'cat {secret}' root 2>&1 < /dev/null",
    "mount --bind {tmp} $TMPDIR 2>&1; cat $TMPDIR/secret.txt 2>&1",
]


@pytest.mark.parametrize("attack", READS)
def test_nothing_outside_the_folder_can_be_read(box: Sandbox, site: dict[str, Any], attack: str) -> None:
    line = attack.format(**site)
    r = run(site["root"], line, ShellLimits(wall_seconds=10), box)
    assert SECRET not in r.text, (line, r.text)


WRITES = [
    "echo x > docs/gzip.txt",
    "echo x >> docs/gzip.txt",
    "rm -f docs/gzip.txt",
    "mv docs/gzip.txt docs/g.txt",
    "chmod 000 docs/gzip.txt",
    "touch -d 2000-01-01 docs/gzip.txt",
    "truncate -s 0 docs/gzip.txt",
    "sed -i d docs/gzip.txt",
    "sed --in d docs/gzip.txt",
    "sed --in-pl=.bak d docs/gzip.txt",
    "sort -o docs/gzip.txt docs/gzip.txt",
    "sort --o=docs/gzip.txt docs/json.txt",
    "sort --outp=docs/gzip.txt docs/json.txt",
    "cp /dev/null docs/gzip.txt",
    "dd if=/dev/zero of=docs/gzip.txt count=1",
    "mkdir docs/new",
    "ln docs/gzip.txt $TMPDIR/hard && echo x > $TMPDIR/hard",
    "ln -s /etc docs/etc",
    "rm -rf docs",
    "find . -delete",
    "find . -name '*.txt' -exec sh -c 'echo x > {{}}' \\;",
    "uniq docs/json.txt docs/gzip.txt",
    "tee docs/gzip.txt < docs/json.txt",
    "echo x > {outside}",
    "echo x > ../pwned",
    "touch {outside}",
    "python3 -c 'open(\"{outside}\", \"w\").write(\"x\")' 2>&1",
    "cp docs/gzip.txt {outside}",
    "sort -o {outside} docs/gzip.txt",
    "sort -S 1K --com=sh -T /tmp docs/gzip.txt",
    "echo x > up/pwned",
    "echo x > /dev/shm/pwned; echo x > /pwned",
    "setfattr -n user.x -v 1 docs/gzip.txt 2>&1",
]


@pytest.mark.parametrize("attack", WRITES)
def test_nothing_can_be_written_outside_scratch(box: Sandbox, site: dict[str, Any], attack: str) -> None:
    before = snapshot(site["root"])
    run(site["root"], attack.format(**site), ShellLimits(wall_seconds=10), box)
    assert snapshot(site["root"]) == before
    assert not site["outside"].exists() and not (site["tmp"] / "pwned").exists() and not Path("/dev/shm/pwned").exists()
    assert site["secret"].read_text() == SECRET + "\n"


MEMORY_READS = [
    "dd if=/proc/{pid}/mem bs=1 skip={address} count=64 2>&1",
    "python3 -c 'import os; f = os.open(\"/proc/{pid}/mem\", os.O_RDONLY); print(os.pread(f, 64, {address}))' 2>&1",
    # process_vm_readv(pid, local iovec, 1, remote iovec, 1, 0), the call gdb-less memory dumpers use
    "python3 -c 'import ctypes as c; b = c.create_string_buffer(64); l = (c.c_void_p * 2)(c.addressof(b), 64); "
    "r = (c.c_void_p * 2)({address}, 64); n = c.CDLL(None, use_errno=True).process_vm_readv({pid}, l, 1, r, 1, 0); print(n, b.raw)' 2>&1",
]


@pytest.mark.parametrize("attack", MEMORY_READS)
def test_sieves_memory_cannot_be_read(box: Sandbox, site: dict[str, Any], attack: str) -> None:
    """A secret held in sieve's own memory (an API key), at an address the attacker is told."""
    import ctypes

    held = ctypes.create_string_buffer(SECRET.encode() * 4)
    line = attack.format(pid=site["pid"], address=ctypes.addressof(held))
    r = run(site["root"], line, ShellLimits(wall_seconds=10), box)
    assert SECRET not in r.text and SECRET.encode().hex() not in r.text, (line, r.text)
    assert held.raw.startswith(SECRET.encode())  # still there: the attack ran against live memory


def test_the_environment_is_built_from_nothing(box: Sandbox, site: dict[str, Any]) -> None:
    r = run(site["root"], "env | cut -d= -f1 | sort", sandbox=box)
    assert set(r.text.split()) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "TERM", "PWD", "SHLVL", "_", "OLDPWD"}, r.text
    assert SECRET not in run(site["root"], "env; set", sandbox=box).text


def test_no_other_process_is_visible(box: Sandbox, site: dict[str, Any]) -> None:
    r = run(site["root"], "ls /proc 2>&1 | grep -c '^[0-9]'; cat /proc/{pid}/status 2>&1 | head -1".format(**site), sandbox=box)
    lines = r.text.splitlines()
    assert int(lines[0]) <= 8 and "Name:" not in r.text  # bwrap: its own few; Landlock: /proc not readable at all


@pytest.fixture()
def listener() -> Iterator[dict[str, Any]]:
    """A TCP server, a UDP socket and a Unix socket server on this machine, counting what reaches them."""
    seen: list[str] = []
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    path = Path(f"/tmp/sieve-test-{os.getpid()}-{time.monotonic_ns()}.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(path))
    unix.listen()
    stop = threading.Event()

    def serve(s: socket.socket, kind: str) -> None:
        s.settimeout(0.1)
        while not stop.is_set():
            try:
                if kind == "udp":
                    s.recv(100)
                else:
                    s.accept()[0].close()
                seen.append(kind)
            except OSError:
                continue

    threads = [threading.Thread(target=serve, args=(s, k), daemon=True) for s, k in ((tcp, "tcp"), (udp, "udp"), (unix, "unix"))]
    for t in threads:
        t.start()
    yield {"seen": seen, "tcp": tcp.getsockname()[1], "udp": udp.getsockname()[1], "unix": str(path)}
    stop.set()
    for t in threads:
        t.join()
    for s in (tcp, udp, unix):
        s.close()
    path.unlink()


NETWORK = [
    "exec 3<>/dev/tcp/127.0.0.1/{tcp} && echo hi >&3",
    "echo hi > /dev/udp/127.0.0.1/{udp}",
    "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {tcp}), 2)' 2>&1 | tail -1",
    "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"127.0.0.1\", {udp}))' 2>&1 | tail -1",
    "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{unix}\")' 2>&1 | tail -1",
    "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), 2)' 2>&1 | tail -1",
]


@pytest.mark.parametrize("attack", NETWORK)
def test_no_network_and_no_local_sockets(box: Sandbox, site: dict[str, Any], listener: dict[str, Any], attack: str) -> None:
    run(site["root"], attack.format(**listener), ShellLimits(wall_seconds=10), box)
    time.sleep(0.2)
    assert listener["seen"] == []


def _alive(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
                state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in cmd and state != "Z":
                found.append(int(name))
    return found


PERSIST = [
    "sleep 771 & echo started",
    "setsid sleep 772 & echo started",
    "(sleep 773 &) ; echo started",
    "nohup sleep 774 > /dev/null 2>&1 & echo started",
    "bash -c 'sleep 775 & disown' ; echo started",
    "sleep 776 > /dev/stdout & echo started",  # holds the output pipe
    "setsid bash -c '(setsid sleep 777 > /dev/stderr &) &' ; echo started",
]


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup-where-possible", "watchdog-only"])
@pytest.mark.parametrize("attack", PERSIST)
def test_no_process_outlives_its_call(box: Sandbox, site: dict[str, Any], attack: str, cgroup: bool) -> None:
    r = run(site["root"], attack, ShellLimits(wall_seconds=20, cgroup=cgroup), box)
    assert r.ok and r.limit is None and r.text.startswith("started")  # returned when the shell did, not at the deadline
    assert _gone("sleep 77" + attack.split("sleep 77")[1][0])


def test_signals_reach_nothing_outside(box: Sandbox, site: dict[str, Any]) -> None:
    sentinel = subprocess.Popen(["sleep", "60"])
    try:
        for attack in (f"kill -9 {sentinel.pid}", f"kill -9 {os.getpid()}", "kill -9 -1", "pkill -9 sleep", f"kill -STOP {os.getpid()}"):
            run(site["root"], attack, ShellLimits(wall_seconds=10), box)
        assert sentinel.poll() is None
    finally:
        sentinel.kill()
        sentinel.wait()


def _gone(marker: str, within: float = 2.0) -> bool:
    """No live process whose command line holds `marker`, allowing the kernel `within` seconds to
    finish processes already killed (a dead PID namespace's last members are reaped after its init)."""
    until = time.monotonic() + within
    while _alive(marker) and time.monotonic() < until:
        time.sleep(0.02)
    return _alive(marker) == []


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup-where-possible", "watchdog-only"])
def test_memory_is_capped_for_all_programs_together(box: Sandbox, site: dict[str, Any], cgroup: bool) -> None:
    """Six programs of 100 MiB each pass a 256 MiB cap together, though each is under it."""
    line = "for i in 1 2 3 4 5 6; do python3 -c 'import time; b = bytearray(100 << 20); time.sleep(10)' & done; wait"
    r = run(site["root"], line, ShellLimits(memory_bytes=256 << 20, wall_seconds=20, cgroup=cgroup), box)
    assert r.limit == "memory" and not r.ok
    assert r.text.endswith("[stopped: its programs together used more than 256 MiB of memory: narrow the command]")
    assert _gone("b = bytearray(100 << 20)")


def test_one_program_over_the_cap_fails_by_itself(box: Sandbox, site: dict[str, Any]) -> None:
    r = run(site["root"], "python3 -c 'bytearray(1 << 31)'", ShellLimits(memory_bytes=256 << 20), box)
    assert not r.ok and "MemoryError" in r.text


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup-where-possible", "watchdog-only"])
def test_a_fork_bomb_is_stopped_and_leaves_nothing(box: Sandbox, site: dict[str, Any], cgroup: bool) -> None:
    limits = ShellLimits(processes=32, wall_seconds=10, cgroup=cgroup)
    r = run(site["root"], "bomb() { bomb | bomb & }; bomb; sleep 10", limits, box)
    assert r.limit == "processes" and r.text.endswith("[stopped: it started more than 32 processes at once]"), r.text
    assert _gone("bomb()")
    run(site["root"], "bomb() { bomb | bomb & }; bomb", limits, box)
    assert _gone("bomb()")  # the shell returned at once: its bomb went with it


def test_scratch_is_capped(box: Sandbox, site: dict[str, Any]) -> None:
    r = run(site["root"], "head -c 5M /dev/zero > $TMPDIR/big; stat -c %s $TMPDIR/big", ShellLimits(scratch_bytes=1 << 20), box)
    sizes = [int(w) for w in r.text.split() if w.isdigit()]
    assert r.limit == "scratch" or (sizes and sizes[-1] <= 1 << 20), r.text


@pytest.mark.slow
def test_thirty_thousand_files_are_a_result_not_a_crash(box: Sandbox, tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(30_000):
        (root / f"document-number-{i:05d}.txt").write_text("word\n" if i % 1000 == 0 else "other\n")
    r = run(root, "grep -l word * | wc -l", ShellLimits(wall_seconds=30), box)
    assert r.ok and r.text.strip() == "30", r.text


def test_bounded_episodes_see_only_their_own_documents(box: Sandbox, tmp_path: Path, gold_records: list[dict[str, Any]]) -> None:
    index = sieve.build_index(gold_records, tmp_path / "idx")
    a = make_tools(index, "bounded-dci", shell_sandbox=box.mechanism)
    b = make_tools(index, "bounded-dci", shell_sandbox=box.mechanism)
    a.begin("school closure heatwave")
    b.begin("river mill")
    mine = set(a.staged.ids)
    assert mine and mine != set(b.staged.ids) and a.staged.root != b.staged.root
    seen = a.call("bash", {"command": "ls; ls .. / 2>&1; find / -name '*.txt' 2>/dev/null | grep -v '^/usr/' | sort -u"}).text
    names = {n.rsplit("/", 1)[-1] for n in seen.split() if n.endswith(".txt")}
    assert names == mine, seen  # nothing of b's folder or of the whole collection
    other = next(iter(set(b.staged.ids) - mine))
    assert "No such file" in a.call("bash", {"command": f"cat {b.staged.files / other}"}).text or \
        "Permission denied" in a.call("bash", {"command": f"cat {b.staged.files / other}"}).text
    before = snapshot(b.staged.root), snapshot(a.whole.root)
    a.call("bash", {"command": "for f in *.txt; do echo x > $f; rm -f $f; done"})
    assert (snapshot(b.staged.root), snapshot(a.whole.root)) == before
    root = a.staged.root
    a.close()
    assert not root.exists() and b.staged.root.exists()


def test_auto_prefers_bubblewrap_then_landlock() -> None:
    if CONFINED:
        assert choose("auto").mechanism == CONFINED[0]


def test_no_sandbox_is_a_refusal_that_names_what_to_install(tmp_path: Path) -> None:
    """In a process where neither mechanism works (no bwrap on PATH, Landlock refused by the
    kernel), choosing a sandbox fails with the install hint, and so does a DCI episode, while
    `none` still runs."""
    code = ("import sys\n"
            "from sieve.tools.shell.sandbox import choose\n"
            "from sieve.errors import SandboxError\n"
            "for m in ('auto', 'bwrap', 'landlock'):\n"
            "    try:\n"
            "        choose(m); print(m, 'chosen')\n"
            "    except SandboxError as e:\n"
            "        print(m, 'refused:', e)\n"
            "print('none', choose('none').mechanism)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, **without_sandboxes(env))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("auto refused: the shell tool needs an operating-system sandbox and none works here (bubblewrap (bwrap) is not "
                        "installed; Landlock is not enabled in this kernel (Linux 5.13+ with landlock in the lsm= list)): install bubblewrap "
                        "(Debian and Ubuntu: `apt install bubblewrap`; Fedora: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`) or run "
                        "on Linux 5.13 or newer with Landlock enabled; inside a container of your own, `--shell-sandbox none` runs commands "
                        "unconfined (not recommended)")
    assert lines[1].startswith("bwrap refused: the shell tool needs an operating-system sandbox and none works here (bubblewrap (bwrap) is not installed):")
    assert lines[2].startswith("landlock refused: the shell tool needs an operating-system sandbox and none works here (Landlock is not enabled")
    assert lines[3] == "none none"


def test_a_dci_episode_refuses_to_start_without_a_sandbox(tmp_path: Path, gold_records: list[dict[str, Any]]) -> None:
    index = sieve.build_index(gold_records, tmp_path / "idx")
    code = ("import sieve, sys\n"
            "from sieve.tools.shell.episode import make_tools\n"
            f"index = sieve.open_index({str(index.path)!r})\n"
            "try:\n"
            "    make_tools(index, 'dci')\n"
            "except sieve.SandboxError as e:\n"
            "    print('refused:', e)\n"
            "print(type(make_tools(index, 'sieve')).__name__)\n")  # the other conditions need none
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, **without_sandboxes(env))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused: the shell tool needs an operating-system sandbox") and out.stdout.endswith("Toolset\n")


def test_sandbox_error_is_a_sieve_error() -> None:
    assert issubclass(SandboxError, sieve.SieveError)


def test_sieve_ask_with_no_sandbox_warns_and_a_missing_one_is_refused(tmp_path: Path, gold_records: list[dict[str, Any]],
                                                                     capfd: pytest.CaptureFixture[str]) -> None:
    """`--shell-sandbox none` runs and says so on stderr; where no sandbox works, `auto` exits 1
    with the install hint before any request reaches the model server."""
    from loopback import LoopbackServer, Say

    from sieve.cli.main import main

    index = sieve.build_index(gold_records, tmp_path / "idx")
    with LoopbackServer(lambda body: Say("<answer>x</answer>")) as srv:
        code = main(["ask", str(index.path), "what?", "--condition", "dci", "--llm-url", srv.url, "--model", "m", "--shell-sandbox", "none"])
        assert code == 0
        err = capfd.readouterr().err
        assert err.startswith("warning: --shell-sandbox none: no sandbox: commands run unconfined as user ")
        assert "the agent's shell commands can read, write and run anything this user can" in err
        asked = len(srv.requests)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        out = subprocess.run([sys.executable, "-m", "sieve", "ask", str(index.path), "what?", "--condition", "dci", "--llm-url", srv.url,
                              "--model", "m"], capture_output=True, text=True, timeout=120, **without_sandboxes(env))
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert "the shell tool needs an operating-system sandbox and none works here" in out.stderr and "apt install bubblewrap" in out.stderr
        assert len(srv.requests) == asked  # refused before the model was asked anything
