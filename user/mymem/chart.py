"""Draws bench/results/mymem.png from mymem.json: time per read and write
against transfer size, log-log, for Kiln and the Linux C module, from user
space and inside the kernel; one panel per clock (icount, TCG wall).

Run by `make bench` (xtask/src/bench/mymem.rs); usage:
    python3 user/mymem/chart.py bench/results/mymem.json bench/results/mymem.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display on a build machine
import matplotlib.pyplot as plt  # noqa: E402


def panel(ax, sizes, series, title):
    for s in series:
        pts = [(x, y) for x, y in zip(sizes, s["ns"]) if y is not None and y > 0]
        if not pts:
            continue
        # Colour by kernel, line style by read/write, marker by level.
        colour = "#d62728" if s["label"].startswith("Kiln") else "#1f77b4"
        style = "-" if "read" in s["label"] else "--"
        marker = "o" if "user" in s["label"] else "s"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker=marker, color=colour, label=s["label"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels(["1 B", "64 B", "1 KiB", "64 KiB", "512 KiB"])
    ax.set_xlabel("transfer size")
    ax.set_ylabel("ns per call")
    ax.set_title(title, fontsize=10)
    ax.grid(which="both", alpha=0.3)


def main(src, dst):
    with open(src) as f:
        data = json.load(f)
    sizes = data["sizes"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    panel(axes[0], sizes, data["clocks"]["icount"], "icount (1 ns = 1 instruction)")
    panel(axes[1], sizes, data["clocks"]["wall"], "TCG wall time")
    axes[0].legend(fontsize=7)
    fig.suptitle("/dev/mymem: time per read/write against size, Kiln vs Linux C module", fontsize=11)
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
