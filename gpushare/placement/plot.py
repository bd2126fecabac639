"""A picture of per-GPU allocation: one row per GPU node, one cell per GPU, filled by what was running and what the
run placed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpushare import output
from gpushare.placement.result import PlacementResult

#: Cell colours: memory held by pods that were running before, memory this run placed, free, an unhealthy GPU.
RUNNING, NEW, FREE, UNHEALTHY = "#4a5568", "#ed8936", "#f7fafc", "#bbbbbb"
#: The flag the picture's path comes from, named in messages about it.
FLAG = "--plot"


def plot_target(path: str | Path) -> Path:
    """The picture's path, refused before any work when gpushare cannot or may not write it (`output.picture_target`):
    `place` and `capacity` check it before they read anything."""
    return output.picture_target(path, FLAG)


#: GPU nodes one picture draws: a larger fleet shows its first ones.
MAX_NODES = 400


def write_plot(result: PlacementResult, path: str | Path, max_nodes: int = MAX_NODES) -> Path:
    """PNG or SVG by the file's suffix, written atomically and sealed as gpushare's (`gpushare.output`). Unhealthy
    GPUs are hatched grey; fleets over `max_nodes` show the first ones."""
    path = plot_target(path)
    plt, Patch, Rectangle = output.pyplot(FLAG)
    nodes = [n for n in result.nodes if n.gpus][:max_nodes]
    width = max((len(n.gpus) for n in nodes), default=1)
    height = max(len(nodes), 1)
    figure, axes = plt.subplots(figsize=(max(6.0, 2 + 0.9 * width), 2.2 + 0.32 * height), dpi=100)
    placed: dict[tuple[str, int], int] = {}  # (node, GPU) -> units this run placed there
    for a in result.placements:
        for index, units in a.gpus:
            placed[(a.node, index)] = placed.get((a.node, index), 0) + units
    for row, node in enumerate(nodes):
        for gpu in node.gpus:
            x, y = gpu.index, row
            draw_gpu(axes, Rectangle, x, y, gpu.healthy)
            if gpu.healthy and gpu.total:
                new = min(placed.get((node.name, gpu.index), 0), gpu.used)
                running = min(gpu.used - new, gpu.total)
                new = min(new, gpu.total - running)
                axes.add_patch(Rectangle((x, y), 0.95 * running / gpu.total, 0.9, facecolor=RUNNING, linewidth=0))
                axes.add_patch(
                    Rectangle(
                        (x + 0.95 * running / gpu.total, y), 0.95 * new / gpu.total, 0.9, facecolor=NEW, linewidth=0
                    )
                )
            if width <= 16 and height <= 60:
                axes.text(x + 0.47, y + 0.45, f"{gpu.used}/{gpu.total}", ha="center", va="center", fontsize=7)
    legend = [
        Patch(facecolor=RUNNING, label="running before (--existing)"),
        Patch(facecolor=NEW, label="placed by this dry run"),
        Patch(facecolor=FREE, edgecolor="#cbd5e0", label="free"),
        Patch(facecolor=UNHEALTHY, hatch="//", edgecolor="#888888", label="unhealthy GPU"),
    ]
    figure.legend(handles=legend, loc="lower center", ncol=4, fontsize=7, frameon=False)
    frame_grid(axes, [n.name for n in nodes], width)
    s = result.semantics
    axes.set_title(
        f"GPU memory allocated per GPU ({s.name}, {s.placement}, unit {s.gpu_memory_unit}): used/total\n"
        f"{len(result.placements)} placed, {len(result.pending)} pending",
        fontsize=9,
    )
    return output.save_picture(plt, figure, path, FLAG)


def draw_gpu(axes: Any, rectangle: Any, x: int, y: int, healthy: bool) -> None:
    """A GPU's cell: free (its use is drawn over it), or hatched grey when the GPU is unhealthy."""
    axes.add_patch(rectangle((x, y), 0.95, 0.9, facecolor=FREE, edgecolor="#cbd5e0", linewidth=0.5))
    if not healthy:
        axes.add_patch(rectangle((x, y), 0.95, 0.9, facecolor=UNHEALTHY, hatch="//", edgecolor="#888888"))


def frame_grid(axes: Any, names: list[str], width: int) -> None:
    """A grid of one row per node and one column per GPU: its limits, labels and frame."""
    height = max(len(names), 1)
    axes.set_xlim(0, width)
    axes.set_ylim(height, 0)
    axes.set_xticks([i + 0.47 for i in range(width)], [f"GPU{i}" for i in range(width)], fontsize=8)
    axes.set_yticks([i + 0.45 for i in range(len(names))], names, fontsize=7 if height <= 60 else 4)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
