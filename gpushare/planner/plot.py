"""`gpushare capacity --plot`: fragmentation per GPU (each GPU's free memory, usable by the smallest request asked
or stranded), and beside it the answers: replicas more per template, nodes to add per pool."""

from __future__ import annotations

from pathlib import Path

from gpushare import output
from gpushare.placement import MAX_NODES, RUNNING, UNHEALTHY, PlacementResult, draw_gpu, frame_grid, plot_target
from gpushare.planner.headroom import Headroom
from gpushare.planner.pools import Sizing

#: Free memory a request of the smallest share asked can use, and free memory below it (stranded).
USABLE, STRANDED = "#48bb78", "#e53e3e"


def write_capacity_plot(
    fleet: PlacementResult,
    share: int,
    answers: list[Headroom],
    sizings: list[Sizing],
    path: str | Path,
    max_nodes: int = MAX_NODES,
) -> Path:
    """The fleet as the running and pending pods leave it, each GPU's free memory coloured by whether `share`
    units fit in it; a second panel with each template's replicas more and each pool's nodes to add."""
    path = plot_target(path)
    plt, Patch, Rectangle = output.pyplot("--plot")
    nodes = [n for n in fleet.nodes if n.gpus][:max_nodes]
    width = max((len(n.gpus) for n in nodes), default=1)
    height = max(len(nodes), 1)
    answered = bool(answers or sizings)
    figure, panels = plt.subplots(
        1,
        2 if answered else 1,
        figsize=(max(6.0, 2 + 0.9 * width) + (5 if answered else 0), 2.4 + 0.32 * min(height, 60)),
        dpi=100,
        squeeze=False,
    )
    grid = panels[0][0]
    for row, node in enumerate(nodes):
        for gpu in node.gpus:
            x, y = gpu.index, row
            draw_gpu(grid, Rectangle, x, y, gpu.healthy)
            if not gpu.healthy or not gpu.total:
                continue
            used = min(gpu.used, gpu.total)
            free = gpu.total - used
            grid.add_patch(Rectangle((x, y), 0.95 * used / gpu.total, 0.9, facecolor=RUNNING, linewidth=0))
            colour = USABLE if share and free >= share else STRANDED
            if free:
                grid.add_patch(
                    Rectangle((x + 0.95 * used / gpu.total, y), 0.95 * free / gpu.total, 0.9, facecolor=colour)
                )
            if width <= 16 and height <= 60:
                grid.add_patch(Rectangle((x, y), 0.95, 0.9, fill=False, edgecolor="#cbd5e0", linewidth=0.5))
                grid.text(x + 0.47, y + 0.45, f"{free} free", ha="center", va="center", fontsize=7)
    frame_grid(grid, [n.name for n in nodes], width)
    unit = fleet.semantics.gpu_memory_unit
    grid.set_title(f"Free memory per GPU (unit {unit}): usable by a {share}-unit request, or stranded", fontsize=9)
    legend = [
        Patch(facecolor=RUNNING, label="allocated"),
        Patch(facecolor=USABLE, label=f"free, {share} units or more"),
        Patch(facecolor=STRANDED, label=f"free, under {share} units (stranded)"),
        Patch(facecolor=UNHEALTHY, hatch="//", edgecolor="#888888", label="unhealthy GPU"),
    ]
    figure.legend(handles=legend, loc="lower center", ncol=4, fontsize=7, frameon=False)
    if answered:
        bars = panels[0][1]
        names = [h.name for h in answers] + [f"pool {s.pool}" for s in sizings]
        values = [h.more for h in answers] + [s.nodes for s in sizings]
        colours = ["#3182ce"] * len(answers) + ["#805ad5"] * len(sizings)
        spans = [(h.more - h.more_min, h.more_max - h.more) for h in answers] + [(0, 0)] * len(sizings)
        positions = list(range(len(names)))
        bars.barh(
            positions,
            values,
            color=colours,
            xerr=([lo for lo, _ in spans], [hi for _, hi in spans]),
            capsize=3,
        )
        for i, value in enumerate(values):
            bars.text(value, i, f" {value}", va="center", fontsize=7)
        bars.set_yticks(positions, names, fontsize=7)
        bars.invert_yaxis()
        bars.set_title("Replicas more per template (blue), nodes to add per pool (purple)", fontsize=9)
        bars.xaxis.get_major_locator().set_params(integer=True)
        for side in ("top", "right"):
            bars.spines[side].set_visible(False)
    return output.save_picture(plt, figure, path, "--plot")
