"""Figures people would rather look at than read: before/after panels and contact sheets.

matplotlib with the non-interactive Agg backend; every function writes a PNG and returns
its path.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["side_by_side", "contact_sheet"]


def _figure(nrows, ncols, cell=3.2):
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(cell * ncols, cell * nrows * 0.8 + 0.4), dpi=110)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _show(ax, image, title):
    img = np.asarray(image)
    if img.dtype == np.uint16:
        img = img / 65535.0
    gray = img.ndim == 2 or img.shape[-1] == 1
    ax.imshow(img.squeeze() if gray else img, cmap="gray" if gray else None, vmin=0 if gray else None,
              vmax=(255 if img.dtype == np.uint8 else 1) if gray else None)
    ax.set_title(title, fontsize=9)
    ax.set_axis_off()


def side_by_side(images, titles, path) -> Path:
    """One row of images with titles, saved to ``path`` (PNG).

    Example:
        >>> import numpy as np, tempfile, os
        >>> from imgproc import figures
        >>> p = figures.side_by_side([np.zeros((4, 4, 3), np.uint8)] * 2, ["a", "b"],
        ...                          os.path.join(tempfile.mkdtemp(), "f.png"))
        >>> p.exists()
        True
    """
    fig, axes = _figure(1, len(images), cell=4.0)
    for ax, img, title in zip(axes[0], images, titles):
        _show(ax, img, title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    return path


def contact_sheet(images, path, *, titles=None, ncols=None) -> Path:
    """A grid of images (``ncols`` defaults to a near-square grid), saved to ``path``."""
    n = len(images)
    ncols = ncols or max(1, math.ceil(math.sqrt(n)))
    nrows = max(1, math.ceil(n / ncols))
    fig, axes = _figure(nrows, ncols, cell=2.2)
    for i, ax in enumerate(axes.flat):
        if i < n:
            _show(ax, images[i], titles[i] if titles else "")
        else:
            ax.set_axis_off()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    return path
