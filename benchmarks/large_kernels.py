"""Where the FFT lowering beats shifted sums (issue 15 item 2; benchmarks/NOTES.md, "The FFT
lowering").

For Gaussians (sigma 6-32: separable passes of 49-257 taps) and disks (11x11-25x25, not
separable: direct passes), eager calls on a NumPy float32 RGB image, timed in turns
(benchmarks/harness.py): imgproc's shifted sums (``method="separable"`` / ``"direct"``,
what ``auto`` took before the FFT), imgproc's FFT (``method="fft"``) and OpenCV
(``GaussianBlur`` / ``filter2D``, which switches to a DFT for large kernels). Prints a
table per kernel and writes ``benchmarks/large_kernels_<side>.png``: time against the weights the
shifted sums apply for each output value, with ``auto``'s threshold
(:data:`imgproc.filters.fft.FFT_MIN_TAPS`) marked.

    python benchmarks/large_kernels.py [--side 2048] [--quick]    # --quick: 512x512, 2 rounds
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import imgproc
from harness import Case, Group, print_group, time_group

HERE = Path(__file__).resolve().parent
SIGMAS = (6.0, 8.0, 12.0, 16.0, 20.0, 24.0, 32.0)
DISK_RADII = (5, 6, 7, 8, 9, 10, 12)


def disk(r: int) -> np.ndarray:
    """A normalised disk of radius ``r`` in a ``(2r + 1)``-sided square."""
    k = (np.hypot(*np.mgrid[-r:r + 1, -r:r + 1]) <= r).astype(np.float32)
    return k / k.sum()


def run(side: int = 2048, repeats: int = 5):
    """``[(family, weights per output value, {case: ms})]`` for every kernel."""
    import cv2

    cv2.setNumThreads(os.cpu_count() or 1)  # as in run.py
    x = np.random.default_rng(0).random((side, side, 3), dtype=np.float32)
    results = []
    for sigma in SIGMAS:
        n = len(imgproc.kernels.gaussian_1d(sigma))  # scipy's truncate=4 rule
        group = Group(f"gaussian_sigma{sigma:g}_{side}", f"Gaussian sigma={sigma:g} ({n}x{n}), {side}x{side}x3 float32",
                      "opencv")
        rows = time_group(group.id, [
            Case("sums", "imgproc, separable passes", lambda s=sigma: imgproc.gaussian_blur(x, s, method="separable")),
            Case("fft", "imgproc, FFT", lambda s=sigma: imgproc.gaussian_blur(x, s, method="fft")),
            Case("opencv", "OpenCV cv2.GaussianBlur",
                 lambda s=sigma, n=n: cv2.GaussianBlur(x, (n, n), s, borderType=cv2.BORDER_REFLECT)),
        ], repeats)
        print_group(group, rows)
        results.append(("Gaussian (separable passes)", 2 * n, {r.name: r.ms for r in rows}))
    for r in DISK_RADII:
        k = disk(r)
        group = Group(f"disk{2 * r + 1}_{side}", f"Disk {2 * r + 1}x{2 * r + 1}, {side}x{side}x3 float32", "opencv")
        rows = time_group(group.id, [
            Case("sums", "imgproc, direct pass", lambda k=k: imgproc.correlate(x, k, method="direct")),
            Case("fft", "imgproc, FFT", lambda k=k: imgproc.correlate(x, k, method="fft")),
            Case("opencv", "OpenCV cv2.filter2D", lambda k=k: cv2.filter2D(x, -1, k, borderType=cv2.BORDER_REFLECT)),
        ], repeats)
        print_group(group, rows)
        results.append(("disk (direct pass)", k.size, {r.name: r.ms for r in rows}))
    return results


def plot(results, side: int, path: Path) -> None:
    """Two panels (Gaussians, disks): ms against weights per output value, log scale."""
    import matplotlib

    from imgproc.filters.fft import FFT_MIN_TAPS

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = list(dict.fromkeys(f for f, _, _ in results))
    fig, axes = plt.subplots(1, len(families), figsize=(11, 4.2), sharey=True)
    styles = {"sums": ("shifted sums (before)", "tab:blue", "o"), "fft": ("FFT (auto from the line)", "tab:red", "s"),
              "opencv": ("OpenCV", "tab:gray", "^")}
    for ax, family in zip(np.atleast_1d(axes), families):
        points = [(w, ms) for f, w, ms in results if f == family]
        for name, (label, colour, marker) in styles.items():
            ax.plot([w for w, _ in points], [ms[name] for _, ms in points], marker=marker, color=colour, label=label)
        ax.set_yscale("log")
        ax.axvline(FFT_MIN_TAPS, color="black", linestyle="--", linewidth=1)
        ax.text(FFT_MIN_TAPS + 5, 0.97, f"auto: FFT from {FFT_MIN_TAPS}", transform=ax.get_xaxis_transform(),
                va="top", fontsize=8)
        ax.set_title(family)
        ax.set_xlabel("weights the shifted sums apply per output value")
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel(f"ms per eager call, {side}x{side}x3 float32")
    np.atleast_1d(axes)[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--quick", action="store_true", help="512x512, 2 rounds")
    args = parser.parse_args()
    side, repeats = (512, 2) if args.quick else (args.side, 5)
    plot(run(side, repeats), side, HERE / f"large_kernels_{side}.png")


if __name__ == "__main__":
    main()
