"""Ready-made pipelines.

``denoise``: the seed chapter's restoration of the noisy cat: a 5×5 Gaussian blur
(σ = 1) and then the 5×5 sharpen kernel (:func:`imgproc.kernels.sharpen`). One deliberate
difference from the chapter: the Gaussian is normalised (sums to 1) as in scipy, where
the chapter's raw table sums to 0.982 and darkens the image by 2%; and the border is
reflected (scipy's default) where the chapter's ``convolve2d(mode="same")`` fills zeros
and darkens the edges.
"""

from __future__ import annotations

from imgproc.pipeline.pipeline import Pipeline

__all__ = ["denoise", "denoise_spec"]


def denoise_spec(*, sigma=1.0, size=5, sharpen=True, mode="reflect") -> list[dict]:
    """The spec of :func:`denoise` with its options."""
    spec = [{"op": "gaussian_blur", "sigma": float(sigma), "size": int(size), "mode": mode}]
    if sharpen:
        spec.append({"op": "sharpen", "size": 5, "mode": mode})
    return spec


def denoise(*, sigma=1.0, size=5, sharpen=True, mode="reflect", layout=None, bucket=False) -> Pipeline:
    """The seed chapter's denoise pipeline: Gaussian (``sigma``, ``size``×``size``) then
    the 5×5 sharpen.

    Example:
        >>> from imgproc import presets
        >>> presets.denoise().to_spec()[0]["op"]
        'gaussian_blur'
    """
    return Pipeline(denoise_spec(sigma=sigma, size=size, sharpen=sharpen, mode=mode), layout=layout, bucket=bucket)
