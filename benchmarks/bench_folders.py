"""Folder builds against JSONL builds of the same documents.

    python benchmarks/bench_folders.py [--pages 1500] [--rounds 3] [--work DIR]

Makes (once, kept in --work) a folder of Markdown files rendered from the English man pages
installed here (`man -P cat`, sections as `##` headings; every other page names itself in YAML
front matter, the others with a `#` heading), and a JSONL file holding the same documents (the
folder loader's own records, written one a line). Then builds each as an index with `--jobs` 1
and 2, each build in a fresh process, the four alternating round by round, and prints the median
wall seconds (and CPU seconds, workers included: on a shared machine wall time moves with the
load) and the folder/JSONL ratio. Writes JSON (default benchmarks/results/folders.json;
folders-before.json is the same run of the code before folder builds were batched).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import resource, sys, time
import sieve
corpus, out, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
index = sieve.build_index(corpus, out, force=True, jobs=jobs)
wall = time.perf_counter() - t0
cpu = sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))
print(len(index), wall, cpu)
"""

_HEADING = re.compile(r"^[A-Z][A-Z0-9 ,/&()-]*$")


def _markdown(page: Path, rendered: str, front_matter: bool) -> str:
    """A man page as Markdown: its unindented all-capitals lines as `##` headings, the body
    dedented (an indented body would be one Markdown code block)."""
    name = page.name.split(".gz")[0]
    stem, _, section = name.rpartition(".")
    title = f"{stem}({section})"
    out = [f"---\ntitle: {json.dumps(title)}\nmanual_section: {json.dumps(section)}\n---\n" if front_matter else f"# {title}\n"]
    for line in rendered.splitlines()[1:-1]:  # the header and footer lines
        if line and not line[0].isspace() and _HEADING.match(line.strip()):
            out.append(f"\n## {line.strip()}\n")
        else:
            out.append(line.strip())
    return "\n".join(out) + "\n"


def _render(page: Path) -> str:
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8"}
    done = subprocess.run(["man", "-P", "cat", "-l", str(page)], capture_output=True, text=True, env=env, errors="replace",
                          check=False)
    return done.stdout if done.returncode == 0 else ""


def make_corpus(work: Path, pages: int) -> tuple[Path, Path]:
    """The folder and the JSONL file of the same documents, made once in `work`."""
    folder, jsonl = work / f"man-md-{pages}", work / f"man-md-{pages}.jsonl"
    if jsonl.exists():
        return folder, jsonl
    found = sorted(p for p in Path("/usr/share/man/man1").glob("*.1*.gz") if p.is_file() and not p.is_symlink())
    if len(found) < pages:
        found += sorted(p for p in Path("/usr/share/man").glob("man[2-8]/*.gz") if p.is_file() and not p.is_symlink())
    step = max(1, len(found) // pages)
    chosen = found[::step][:pages]
    folder.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(2) as pool:
        for i, (page, text) in enumerate(zip(chosen, pool.map(_render, chosen))):
            if text.strip():
                sub = folder / page.parent.name
                sub.mkdir(exist_ok=True)
                (sub / (page.name.split(".gz")[0] + ".md")).write_text(_markdown(page, text, i % 2 == 0))
    from sieve.corpus.folders import records

    tmp = jsonl.with_suffix(".tmp")
    with tmp.open("w") as fh:
        for _, _, rec in records(folder):
            if isinstance(rec, dict):
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.replace(jsonl)
    return folder, jsonl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "sieve-bench-folders"))
    ap.add_argument("--out", default=str(HERE / "results" / "folders.json"))
    args = ap.parse_args()
    work = Path(args.work)
    folder, jsonl = make_corpus(work, args.pages)
    files = sum(1 for _ in folder.rglob("*.md"))
    size = sum(p.stat().st_size for p in folder.rglob("*.md"))
    print(f"{files:,} Markdown files ({size / 1e6:.1f} MB) in {folder}; the same documents in {jsonl}", flush=True)
    cases = [(kind, jobs) for jobs in (1, 2) for kind in ("folder", "jsonl")]
    runs: dict[str, list[float]] = {f"{k} jobs={j}": [] for k, j in cases}
    cpu: dict[str, list[float]] = {f"{k} jobs={j}": [] for k, j in cases}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for r in range(args.rounds):
        for kind, jobs in cases:
            corpus = folder if kind == "folder" else jsonl
            done = subprocess.run([sys.executable, "-c", CHILD, str(corpus), str(work / "idx"), str(jobs)],
                                  check=True, capture_output=True, text=True, env=env)
            docs, seconds, used = done.stdout.split()
            runs[f"{kind} jobs={jobs}"].append(float(seconds))
            cpu[f"{kind} jobs={jobs}"].append(float(used))
            print(f"round {r + 1} {kind:6s} jobs={jobs}: {int(docs):,} documents, {float(seconds):.2f} s "
                  f"({float(used):.2f} s CPU)", flush=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    cpu_medians = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"\nmedians of {args.rounds} builds: wall seconds (CPU seconds, workers included)")
    print(f"{'jobs':>6s} {'folder':>14s} {'jsonl':>14s} {'ratio':>7s}")
    ratios = {}
    for jobs in (1, 2):
        f, j = medians[f"folder jobs={jobs}"], medians[f"jsonl jobs={jobs}"]
        fc, jc = cpu_medians[f"folder jobs={jobs}"], cpu_medians[f"jsonl jobs={jobs}"]
        ratios[f"jobs={jobs}"] = f / j
        print(f"{jobs:>6d} {f:6.2f} ({fc:5.2f}) {j:6.2f} ({jc:5.2f}) {f / j:7.2f}")
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    result = {"folder": str(folder), "jsonl": str(jsonl), "files": files, "bytes": size, "rounds": args.rounds,
              "medians": medians, "cpu_medians": cpu_medians, "ratios": ratios, "runs": runs, "cpu": cpu,
              "cpus": os.cpu_count(), "load_at_end": load, "python": platform.python_version()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
