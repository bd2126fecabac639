"""A picture of per-GPU allocation: one row per GPU node, one cell per GPU, shaded by the share allocated."""

from __future__ import annotations

from pathlib import Path

from gpushare.errors import InputError
from gpushare.placement.result import PlacementResult


def write_plot(result: PlacementResult, path: str | Path, max_nodes: int = 400) -> Path:
    """PNG or SVG by the file's suffix. Unhealthy GPUs are hatched grey; fleets over `max_nodes` show the first ones."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise InputError("--plot", str(path), "a .png or .svg file name")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LinearSegmentedColormap
        from matplotlib.patches import Rectangle
    except ImportError:
        raise InputError("--plot", str(path), "matplotlib installed (pip install 'gpushare[plot]')") from None
    nodes = [n for n in result.nodes if n.gpus][:max_nodes]
    width = max((len(n.gpus) for n in nodes), default=1)
    height = max(len(nodes), 1)
    figure, axes = plt.subplots(figsize=(max(6.0, 2 + 0.9 * width), 1.6 + 0.32 * height), dpi=100)
    cmap = LinearSegmentedColormap.from_list("alloc", ["#f0f4f8", "#2b6cb0"])
    for row, node in enumerate(nodes):
        for gpu in node.gpus:
            share = gpu.used / gpu.total if gpu.total else 0.0
            color = "#bbbbbb" if not gpu.healthy else cmap(share)
            axes.add_patch(Rectangle((gpu.index, row), 0.95, 0.9, color=color, hatch=None if gpu.healthy else "//"))
            if width <= 16 and height <= 60:
                axes.text(
                    gpu.index + 0.47,
                    row + 0.45,
                    f"{gpu.used}/{gpu.total}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if share > 0.6 else "black",
                )
    axes.set_xlim(0, width)
    axes.set_ylim(height, 0)
    axes.set_xticks([i + 0.47 for i in range(width)], [f"GPU{i}" for i in range(width)], fontsize=8)
    axes.set_yticks([i + 0.45 for i in range(len(nodes))], [n.name for n in nodes], fontsize=7 if height <= 60 else 4)
    s = result.semantics
    axes.set_title(
        f"GPU memory allocated ({s.name}, {s.placement}, unit {s.gpu_memory_unit})\n"
        f"{len(result.placements)} placed, {len(result.pending)} pending",
        fontsize=9,
    )
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path
