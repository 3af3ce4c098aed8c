"""What the PNG charts share: matplotlib imported when a chart is drawn (never by the
commands that draw none), and the figure written whole or not at all."""

from __future__ import annotations

import io
import os
from types import ModuleType
from typing import TYPE_CHECKING

from reflect.eval._trace import write_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pyplot() -> ModuleType | None:
    """matplotlib's pyplot on its file backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save(plt: ModuleType, fig: Figure, path: str | os.PathLike[str]) -> bool:
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    write_bytes(path, buffer.getvalue())
    return True
