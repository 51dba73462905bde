"""RQ3's figures: APFD per order, faults revealed along each order, failure rate per fifth."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from research.common import pyplot, save_figure
from research.rq3.design import SEGMENTS, FailureDef
from research.rq3.orders import BASELINES


def box_plot(raw: dict[str, Any], taus: Sequence[float], defs: Sequence[FailureDef],
             names: list[str], path: Path, title: str) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(len(defs), len(taus), figsize=(3.2 * len(taus) + 1, 3.4 * len(defs)),
                             squeeze=False, sharey="row")
    for i, fd in enumerate(defs):
        for j, tau in enumerate(taus):
            ax = axes[i][j]
            per = raw[f"{fd.name}|tau={tau:g}"]
            data = [[v for v in per[name]["all"] if v is not None] for name in names]
            if any(data):
                ax.boxplot([d if d else [np.nan] for d in data], showmeans=True)
            ax.set_xticks(range(1, len(names) + 1), names, rotation=60, ha="right", fontsize=7)
            ax.set_title(f"{fd.name}, tau={tau:g}", fontsize=9)
            if j == 0:
                ax.set_ylabel("APFD")
    fig.suptitle(f"RQ3 APFD by order: {title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def detection_plot(curves: dict[str, dict[str, np.ndarray]], tau: float, path: Path,
                   title: str) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.8), squeeze=False)
    for ax, (fname, per) in zip(axes[0], curves.items()):
        for name, curve in per.items():
            x = np.arange(1, len(curve) + 1) / len(curve)
            ax.plot(x, curve, label=name, linewidth=1.2,
                    linestyle="-" if name in BASELINES else "--")
        ax.set_xlabel("fraction of the suite run")
        ax.set_ylabel("fraction of faults revealed")
        ax.set_title(f"{fname}, tau={tau:g}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Fault detection along each order (mean over runs): {title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def segment_plot(segments: list[dict[str, Any]], defs: Sequence[FailureDef], path: Path,
                 title: str) -> Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(defs), figsize=(5 * len(defs), 3.6), squeeze=False)
    for ax, fd in zip(axes[0], defs):
        for row in (r for r in segments if r["failure"] == fd.name):
            ys = [row[f"fifth_{i + 1}"] for i in range(SEGMENTS)]
            ax.plot(range(1, SEGMENTS + 1), ys, marker="o", label=row["order"],
                    linestyle="-" if row["order"] in BASELINES else "--")
        ax.set_xlabel("fifth of the order")
        ax.set_ylabel("failure rate")
        ax.set_xticks(range(1, SEGMENTS + 1))
        ax.set_title(fd.name, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Failure rate along each order: {title}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)
