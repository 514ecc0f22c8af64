"""The ``imgproc denoise`` command's pipeline: one stage per ``--method``.

Folder runs apply the pipeline to batches of same-shape images; every method that needs
the noise level estimates it *per image inside the compiled program* (``auto`` runs
``lax.map`` over the batch: estimate, then the chosen method, only that one), so a
batch gives each image what it would get alone. ``--noise-sigma`` replaces the estimate
for every image.
"""

from __future__ import annotations

import click
import numpy as np

# CLI names -> library methods
METHODS = ("auto", "nl-means", "bm3d", "tv", "bilateral", "median", "chapter")

# the options only some methods use: parameter name -> those methods (--verbose: every one)
METHOD_OPTIONS = {
    "noise_sigma": ("auto", "nl-means", "bm3d", "bilateral"),
    "sigma": ("chapter",),
    "size": ("chapter", "median"),
    "sharpen": ("chapter",),
    "mode": ("chapter", "median", "bilateral", "nl-means"),
}


def check_options(ctx, method):
    """Refuse (``ValueError``, exit 2, one line) an option the user gave that ``method``
    does not use (``--method nl-means --sigma 3`` was silently ignored), naming the
    methods each applies to. Only options given on the command line count, not defaults
    (click's ``get_parameter_source``)."""
    from click.core import ParameterSource

    unused = []
    for name, methods in METHOD_OPTIONS.items():
        if method in methods or ctx.get_parameter_source(name) in (None, ParameterSource.DEFAULT,
                                                                   ParameterSource.DEFAULT_MAP):
            continue
        param = next(p for p in ctx.command.params if p.name == name)
        flag = param.secondary_opts[0] if param.secondary_opts and not ctx.params[name] else param.opts[0]
        which = methods[0] + " only" if len(methods) == 1 else ", ".join(methods[:-1]) + " or " + methods[-1]
        unused.append(f"{flag} applies to --method {which}")
    if unused:
        default = " (the default)" if ctx.get_parameter_source("method") in (ParameterSource.DEFAULT,
                                                                             ParameterSource.DEFAULT_MAP) else ""
        what = "this option" if len(unused) == 1 else "these options"
        raise ValueError(f"--method {method}{default} does not use {what}: " + "; ".join(unused))


def build(method, *, noise_sigma=None, sigma=1.0, size=None, sharpen=True, mode="reflect"):
    """The :class:`imgproc.Pipeline` for ``imgproc denoise --method METHOD``."""
    import imgproc
    from imgproc import presets

    if size is not None and (size < 1 or size % 2 == 0):
        raise ValueError(f"size must be an odd integer >= 1 (1, 3, 5, ...); got {size!r}")
    if method == "chapter":
        return presets.denoise(sigma=sigma, size=5 if size is None else size, sharpen=sharpen, mode=mode, bucket="auto")
    noise = {} if noise_sigma is None else {"sigma": float(noise_sigma)}
    if method == "auto":
        stage = {"op": "denoise", "method": "auto", **noise}
    elif method == "nl-means":
        stage = {"op": "nl_means", "mode": mode, **noise}
    elif method == "bm3d":
        stage = {"op": "bm3d", **noise}
    elif method == "tv":
        stage = {"op": "tv_chambolle"}
    elif method == "bilateral":
        stage = {"op": "denoise", "method": "bilateral", "mode": mode, **noise}
    else:  # median
        stage = {"op": "median", "size": 3 if size is None else size, "mode": mode}
    return imgproc.Pipeline([stage], bucket="auto")  # buckets only where every stage is local


class Verbose:
    """Wraps a pipeline for ``--verbose``: the runner calls :meth:`describe` with each batch
    and the paths of its images before running it, which prints one line per file on
    stderr with the noise estimate, the impulse fraction and the method used (by its
    ``--method`` name), as text or, with ``log_format="json"``, as one JSON object
    (``{"event": "estimate", "path", "noise_sigma", "impulses", "method"}``, with
    ``"given_sigma"`` when ``--noise-sigma`` replaces the estimate), under the lock that
    keeps lines out of a decoder's capture of fd 2 (as the run's report does)."""

    def __init__(self, pipeline, method, log_format="text", noise_sigma=None):
        self.pipeline, self.method, self.json = pipeline, method, log_format == "json"
        self.given = None if noise_sigma is None else float(noise_sigma)

    def describe(self, images, names):
        import json

        from imgproc.io.native_stderr import LOCK
        from imgproc.restoration import auto_choice

        arr = np.asarray(images)
        for name, (choice, sigma, frac) in zip(names, auto_choice(arr, layout="NHWC")):
            picked = choice.replace("_", "-") if self.method == "auto" else self.method
            if self.json:
                given = {} if self.given is None else {"given_sigma": self.given}
                line = json.dumps({"event": "estimate", "path": name, "noise_sigma": round(float(sigma), 4), **given,
                                   "impulses": round(float(frac), 6), "method": picked})
            else:
                noise = f"noise sigma {sigma:.2f}" if self.given is None else \
                    f"noise sigma {self.given:.2f} given (estimated {sigma:.2f})"
                line = f"{name}: {noise}, impulses {100 * frac:.2f}%, method {picked}"
            with LOCK:
                click.echo(line, err=True)

    def __call__(self, images, **kwargs):
        return self.pipeline(images, **kwargs)
