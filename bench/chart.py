"""Draws bench/results/latest.png from latest.json: for every benchmark the
Kiln/Linux ratio under both clocks, as horizontal bars on a log scale so
that 2x slower and 2x faster are the same length. Below 1 = Kiln faster.

Run by `make bench` (xtask/src/bench/report.rs); usage:
    python3 bench/chart.py bench/results/latest.json bench/results/latest.png
"""
import json
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
    clocks = [("icount", "icount (instructions)", "#1f77b4"), ("wall", "TCG wall time (median)", "#ff7f0e")]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(names) + 1.8))
    height = 0.38
    for i, (key, label, colour) in enumerate(clocks):
        ys, ratios, missing = [], [], []
        for j, b in enumerate(benches):
            y = j + (i - 0.5) * height
            r = b[key]["ratio"]
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


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py LATEST.json OUT.png")
    main(sys.argv[1], sys.argv[2])
