"""Draws bench/results/latest.png from latest.json: for every benchmark the
Kiln/Linux ratio on the fair machine under both clocks, and under icount on
`-cpu max`, as horizontal bars on a log scale so that 2x slower and 2x
faster are the same length. Below 1 = Kiln faster.

With a history folder, also draws the trend: the fair icount ratio of every
benchmark (rows) in every kept run (columns, oldest first, labelled by
date and commit), coloured by distance from the 0.8 goal, so a regression
shows as a cell changing colour.

Run by `make bench` (xtask/src/bench/report.rs); usage:
    python3 bench/chart.py LATEST.json OUT.png [HISTORY_DIR HISTORY.png]
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on a build machine
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402


def main(src, dst):
    with open(src) as f:
        data = json.load(f)
    benches = data["benchmarks"]
    names = [b["name"] for b in benches]
    clocks = [
        ("icount", "icount, fair machine (instructions)", "#1f77b4"),
        ("wall", "TCG wall time, fair machine (median)", "#ff7f0e"),
        ("icount_cpu_max", "icount, -cpu max (Linux copies byte-wise)", "#bbbbbb"),
    ]
    clocks = [c for c in clocks if any(c[0] in b for b in benches)]
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(names) + 1.8))
    height = 0.8 / len(clocks)
    for i, (key, label, colour) in enumerate(clocks):
        ys, ratios, missing = [], [], []
        for j, b in enumerate(benches):
            y = j + (i - (len(clocks) - 1) / 2) * height
            r = b.get(key, {}).get("ratio")
            if r is None:
                missing.append(y)
            else:
                ys.append(y)
                ratios.append(r)
        # Bars grow from 1 (parity) towards the ratio, left = Kiln faster.
        ax.barh(ys, [r - 1 for r in ratios], left=1, height=height, color=colour, label=label)
        for y, r in zip(ys, ratios):
            ax.text(r, y, f" {r:.2f} ", va="center", ha="left" if r >= 1 else "right", fontsize=7)
        for y in missing:
            ax.text(1, y, " n/a", va="center", ha="left", fontsize=7, color="grey")
    ax.set_xscale("log")
    ax.axvline(1, color="black", linewidth=0.8)
    ax.axvline(0.8, color="green", linewidth=0.8, linestyle="--", label="goal (0.8)")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.set_xlabel("Kiln / Linux time per operation (log scale; below 1 = Kiln faster)")
    ax.set_title(f"Kiln vs Linux {data['linux']} on QEMU TCG ({data['date']})", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.3)
    lo, hi = ax.get_xlim()
    lo, hi = min(lo, 0.5), max(hi, 2)
    ax.set_xlim(lo, hi)
    # Plain ratios (0.25, 0.5, 1, 2, ...) read better than powers of ten.
    ticks = [t for t in (1 / 16, 1 / 8, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if lo <= t <= hi]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(len(names) - 0.4, -0.6)
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


def history(folder, dst):
    runs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            data = json.load(f)
        ratios = {b["name"]: b["icount"]["ratio"] for b in data["benchmarks"]}
        label = os.path.basename(path)[: -len(".json")]
        runs.append((label, ratios))
    if not runs:
        return
    names = []
    for _, ratios in runs:
        names += [n for n in ratios if n not in names]
    # Rows with no ratio in any run (the @smp2 rows: Linux has no icount
    # figures there) would be empty lines.
    names = [n for n in names if any(r.get(n) is not None for _, r in runs)]
    import numpy as np

    grid = np.full((len(names), len(runs)), np.nan)
    for j, (_, ratios) in enumerate(runs):
        for i, n in enumerate(names):
            if ratios.get(n) is not None:
                grid[i, j] = ratios[n]
    fig, ax = plt.subplots(figsize=(max(6.5, 2.2 + 1.3 * len(runs)), 0.32 * len(names) + 2.2))
    # log2(ratio / goal): green at or under the goal, red above it.
    shade = np.log2(grid / 0.8)
    ax.imshow(np.ma.masked_invalid(shade), cmap="RdYlGn_r", vmin=-2, vmax=2, aspect="auto")
    for i in range(len(names)):
        for j in range(len(runs)):
            v = grid[i, j]
            ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xticks(range(len(runs)))
    # DATE-COMMIT: the date on one line, the commit under it.
    ax.set_xticklabels([label[:15].replace("T", " ") + "\n" + label[16:] for label, _ in runs], fontsize=7)
    ax.set_title("Kiln / Linux instructions per operation (fair icount) by run; goal ≤ 0.80", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 5):
        sys.exit("usage: chart.py LATEST.json OUT.png [HISTORY_DIR HISTORY.png]")
    main(sys.argv[1], sys.argv[2])
    if len(sys.argv) == 5:
        history(sys.argv[3], sys.argv[4])
