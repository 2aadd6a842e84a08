"""Drawing `sieve eval report`'s figures from their data (`sieve.eval.report.figure_data`) with
matplotlib (the `eval` extra). Nothing is computed here: each figure's numbers are in its
`<id>.json`.

Readable with 21 runs or more: no text label sits on a point (colour names the family, the marker
the ranker, in a legend beside the axes); where one axis would hold many lines or bars, a panel per
collection and family (small multiples)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

MARKERS = ("o", "s", "^", "D", "v", "P", "X")
FAILURES = (
    ("retrieval", "tab:red"),
    ("selection", "tab:orange"),
    ("synthesis", "tab:purple"),
    ("unattributed", "tab:gray"),
)


def _panels(
    n: int, cols: int = 3, size: tuple[float, float] = (4.2, 3.2)
) -> tuple[Figure, list[Any]]:
    cols = max(1, min(cols, n))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def figure_1(f: dict[str, Any]) -> Figure:
    fams, rankers = f["families"], f["rankers"]
    colour = {x: plt.get_cmap("tab10")(i) for i, x in enumerate(fams)}
    marker = {x: MARKERS[i % len(MARKERS)] for i, x in enumerate(rankers)}
    fig, axes = _panels(len(f["panels"]), cols=2, size=(5.5, 4.2))
    seen: dict[str, Any] = {}
    encoders = [pt["encoder"] for p in f["panels"] for pt in p["points"] if pt["encoder"]]
    usual = max(set(encoders), key=encoders.count) if encoders else None
    for ax, p in zip(axes, f["panels"]):
        at = {pt["run"]: (pt["tokens"], pt["accuracy"]) for pt in p["points"]}
        for a in p["arrows"]:
            ax.annotate(
                "",
                xy=at[a["to"]],
                xytext=at[a["from"]],
                arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 0.9},
                zorder=2,
            )
        for pt in p["points"]:
            fam, rk = (
                pt["family"] if pt["family"] in colour else "other",
                pt["ranker"] if pt["ranker"] in marker else "none",
            )
            # another encoder: a hollow point and its name
            other = pt["encoder"] is not None and pt["encoder"] != usual
            key = (
                f"{pt['family']} · {pt['ranker']}"
                + (f" · {', '.join(pt['marks'])}" if pt["marks"] else "")
                + (f" · {pt['encoder']}" if other else "")
            )
            hollow = bool(pt["marks"]) or other
            h = ax.scatter(
                *at[pt["run"]],
                s=42,
                marker=marker[rk],
                zorder=3,
                facecolors="none" if hollow else colour[fam],
                edgecolors=colour[fam],
            )
            seen.setdefault(key, h)
        ax.set_title(p["collection"] or "?", fontsize=9)
        ax.set_xlabel("distinct tokens per question", fontsize=8)
        ax.set_ylabel(f"accuracy ({'/'.join(p['by'])}, %)", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.legend(
        list(seen.values()),
        list(seen.keys()),
        fontsize=7,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        frameon=False,
    )
    fig.suptitle(f["title"] + " (arrows: baseline to SIEVE)", fontsize=9)
    return fig


def figure_3(f: dict[str, Any]) -> Figure:
    fig, axes = _panels(len(f["panels"]) + 1)
    for ax, p in zip(axes, f["panels"]):
        for line in p["lines"]:
            ax.plot(range(len(line["deltas"])), line["deltas"], label=line["label"], lw=1.2)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(f"{p['collection']}: {p['family']}", fontsize=8)
        ax.set_ylabel(f"tokens minus {p['baseline']}", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    ax = axes[-1]
    v = f["verdicts"]
    y = np.arange(len(v))
    ax.barh(y, [x["gained"] for x in v], color="tab:green", label="gained")
    ax.barh(y, [-x["lost"] for x in v], color="tab:red", label="lost")
    ax.set_yticks(y, [f"{x['collection']}: {x['label']}" for x in v], fontsize=6)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel("right only here (+), only in the baseline (-)", fontsize=7)
    ax.legend(fontsize=6)
    fig.suptitle(f["title"], fontsize=9)
    fig.tight_layout()
    return fig


def figure_4(f: dict[str, Any]) -> Figure:
    fig, axes = _panels(len(f["panels"]), cols=2, size=(5.0, 3.0))
    for ax, p in zip(axes, f["panels"]):
        bars = p["bars"]
        y = np.arange(len(bars))
        ax.barh(
            y,
            [b["delta_accuracy"] for b in bars],
            color=["tab:green" if b["delta_accuracy"] > 0 else "tab:red" for b in bars],
        )
        ax.set_yticks(
            y, [f"{b['ablation']} ({b['delta_tokens']:+,.0f} tok.)" for b in bars], fontsize=7
        )
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_title(f"{p['collection']}, {p['ranker']}", fontsize=8)
        ax.set_xlabel("accuracy change (points)", fontsize=7)
    fig.suptitle(f["title"], fontsize=9)
    fig.tight_layout()
    return fig


def figure_5(f: dict[str, Any]) -> Figure:
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in f["series"]:
        ax.plot(
            [p["encoder"] for p in s["points"]],
            [p["accuracy"] for p in s["points"]],
            marker="o",
            label=f"{s['collection']}: {s['condition']} {s['ranker']}",
        )
    ax.set_ylabel("accuracy (%)")
    ax.tick_params(axis="x", labelsize=7, rotation=20)
    ax.legend(fontsize=7)
    ax.set_title(f["title"], fontsize=9)
    fig.tight_layout()
    return fig


def figure_6(f: dict[str, Any]) -> Figure:
    fig, axes = _panels(len(f["panels"]), cols=1, size=(9.0, 3.5))
    for ax, p in zip(axes, f["panels"]):
        bb = p["backbones"]
        x = np.arange(len(p["groups"]))
        w = 0.8 / len(bb)
        for j, b in enumerate(bb):
            ax.bar(x + j * w, [g["values"].get(b, 0.0) for g in p["groups"]], w, label=b)
        ax.set_xticks(
            x + 0.4 - w / 2, [g["label"] for g in p["groups"]], rotation=30, ha="right", fontsize=7
        )
        ax.set_ylabel("accuracy (%)", fontsize=8)
        ax.set_title(p["collection"], fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure_7(f: dict[str, Any]) -> Figure:
    fig, axes = _panels(
        len(f["panels"]),
        cols=2,
        size=(5.5, max(2.5, 0.6 + 0.28 * max(len(p["bars"]) for p in f["panels"]))),
    )
    for ax, p in zip(axes, f["panels"]):
        y = np.arange(len(p["bars"]))
        left = np.zeros(len(p["bars"]))
        for k, c in FAILURES:
            share = np.array([100 * b[k] for b in p["bars"]])
            ax.barh(y, share, left=left, color=c, label=k)
            left += share
        ax.set_yticks(y, [f"{b['label']} ({b['wrong']})" for b in p["bars"]], fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("share of incorrect answers (%)", fontsize=7)
        ax.set_title(p["collection"], fontsize=9)
    axes[0].legend(fontsize=6, loc="lower right")
    fig.suptitle(f["title"], fontsize=9)
    fig.tight_layout()
    return fig


def figure_8(f: dict[str, Any]) -> Figure:
    fig, axes = _panels(len(f["panels"]))
    for ax, p in zip(axes, f["panels"]):
        for line in p["lines"]:
            calls = [c for c, _ in line["calls"]]
            share = np.cumsum([n for _, n in line["calls"]]) / max(
                1, sum(n for _, n in line["calls"])
            )
            ax.step(calls, 100 * share, where="post", label=line["label"])
        ax.set_title(f"{p['collection']}: {p['family']}", fontsize=8)
        ax.set_xlabel("LLM calls", fontsize=7)
        ax.set_ylabel("questions (%)", fontsize=7)
        ax.legend(fontsize=6)
    fig.suptitle(f["title"], fontsize=9)
    fig.tight_layout()
    return fig


DRAW: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "figure-1": figure_1,
    "figure-3": figure_3,
    "figure-4": figure_4,
    "figure-5": figure_5,
    "figure-6": figure_6,
    "figure-7": figure_7,
    "figure-8": figure_8,
}


def draw_all(figures: dict[str, dict[str, Any]], out: Path) -> list[Path]:
    """Each figure that has its runs as `out/<id>.png`."""
    out.mkdir(parents=True, exist_ok=True)
    done = []
    for key, data in figures.items():
        if "skipped" in data or not data.get("panels", data.get("series")):
            continue
        fig = DRAW[key](data)
        path = out / f"{key}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        done.append(path)
    return done
