"""Pictures of what a table cannot show at a glance (matplotlib, imported only when drawing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import UserError


def sweep_plot(rows: list[dict[str, Any]], path: str | Path, title: str) -> Path:
    """Error against cost for each point of a sweep: mitigated (filled) and unmitigated (hollow)
    errors against the shots each point spent, one labelled marker per point."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for row in rows:
        label = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in row["point"].items())
        if row["error_unmitigated"] is not None:
            axes.scatter(row["shots"], row["error_unmitigated"], facecolors="none", edgecolors="grey")
        if row["error_mitigated"] is not None:
            axes.scatter(row["shots"], row["error_mitigated"])
            axes.annotate(label, (row["shots"], row["error_mitigated"]), fontsize=7, xytext=(4, 4), textcoords="offset points")
    axes.set_xlabel("shots spent (all circuits)")
    axes.set_ylabel("absolute error against the ideal value")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path = Path(path)
    try:
        figure.savefig(path, dpi=120)
    except OSError as exc:
        raise UserError(f"cannot write the plot to {path}: {exc.strerror}.") from None
    finally:
        plt.close(figure)
    return path
