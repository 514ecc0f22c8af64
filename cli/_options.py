"""The options every file command shares, built once into a :class:`RunOptions`.

:func:`io_options` adds IN, OUT and the shared options to a command, builds one
:class:`RunOptions` from them and hands it to the command through click's context object
(``ctx.obj``); the command takes it with ``@click.pass_obj``::

    @cli.command()
    @io_options
    @click.option("--sigma", ...)
    @click.pass_obj
    def blur(run: RunOptions, sigma): ...
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os

import click

from imgproc.io.formats import DEFAULT_MAX_PIXELS, OUTPUT_FORMATS
from imgproc.io.run_options import RunOptions

EXIT_CODES = """\b
Exit codes:
  0    all done
  1    a batch finished but some inputs failed (summary printed)
  2    usage error
  65   input is not a valid image (corrupt, truncated, unsupported, too many pixels)
  66   input missing or unreadable
  69   --engine ray: the Ray cluster cannot be reached, or ray is not installed
  73   output cannot be created (exists without --overwrite, same file as input,
       unknown extension, folder not writable)
  74   I/O error while writing (disk full)
  70   internal error (one line; the traceback with --debug)
  130  interrupted
  141  the output pipe was closed by its reader (imgproc ops | head)
"""

MODES = ("reflect", "mirror", "nearest", "wrap", "constant")


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and infinity, naming the option (click's
    own range test lets NaN through, and the library then named its argument instead)."""

    def convert(self, value, param, ctx):
        value = super().convert(value, param, ctx)
        if not math.isfinite(value):
            self.fail(f"{value} is not a finite number" + ("" if self.min is None else f" >= {self.min:g}"), param, ctx)
        return value


def _format_option(ctx, param, value):
    if value is None:
        return None
    ext = value.lower() if value.startswith(".") else "." + value.lower()
    if ext not in OUTPUT_FORMATS:
        raise click.BadParameter(f"{value!r} is not one of {', '.join(sorted(e[1:] for e in OUTPUT_FORMATS))}")
    return ext


def _memory_option(ctx, param, value):
    from imgproc.io import memory

    if value is None:
        return memory.default_max_memory()
    try:
        return memory.parse_size(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


_FIELDS = {f.name for f in dataclasses.fields(RunOptions)}


def io_options(fn):
    """Add IN, OUT and the shared options to a command; build their :class:`RunOptions`
    once and put it in ``ctx.obj`` for the command (``@click.pass_obj``)."""

    @functools.wraps(fn)
    def wrapper(**kwargs):
        ctx = click.get_current_context()
        shared = {name: kwargs.pop(name) for name in list(kwargs) if name in _FIELDS}
        inputs = tuple(os.path.expanduser(i) for i in shared.pop("inputs"))
        shared["output"] = os.path.expanduser(shared["output"])
        ctx.obj = RunOptions(**shared, input=inputs[0], inputs=inputs, debug=bool(ctx.find_root().params.get("debug", False)))
        return fn(**kwargs)

    # click lists a command's params in the reverse order of ``__click_params__`` (the
    # decorator applied last comes first). The shared options go to the front of that list,
    # so ``--help`` shows the command's own options first; IN and OUT stay where they are
    # (their order among the arguments is what the parser uses).
    params = wrapper.__dict__.setdefault("__click_params__", [])
    n_before = len(params)
    opt = click.option
    for decorator in reversed([
        click.argument("inputs", nargs=-1, required=True, metavar="IN..."),
        click.argument("output", metavar="OUT"),
        opt("--overwrite", is_flag=True, help="Replace outputs that exist (atomically); without it they are skipped in folder runs."),
        opt("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG/WebP quality."),
        opt("-r", "--recursive", is_flag=True, help="Folder input: include subfolders (the output mirrors the tree)."),
        opt("--format", "out_format", metavar="EXT", default=None, callback=_format_option,
            help="Folder runs: output format for every file (jpg, png, tif, webp, bmp); default: the input's extension (png for gif)."),
        opt("--max-pixels", type=click.IntRange(min=1), default=DEFAULT_MAX_PIXELS, show_default=True,
            help="Refuse images with more pixels (checked before decoding)."),
        opt("--max-memory", metavar="SIZE", default=None, callback=_memory_option,
            help="Refuse an image whose decode and processing would need more memory (estimated from its header, "
                 "before decoding): 4G, 512M, 50% of the RAM, 0 for no limit [default: half the RAM]."),
        opt("--allow-truncated", is_flag=True, help="Decode truncated files as far as they go (with a warning)."),
        opt("--strip", is_flag=True, help="Write no metadata (EXIF, ICC profile)."),
        opt("--fail-fast", is_flag=True, help="Folder runs: stop at the first failing file."),
        opt("-q", "--quiet", is_flag=True, help="No progress, warnings or success summary (errors still printed)."),
        opt("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
            help="Folder runs: progress, errors and summary as text or JSON lines on stderr."),
        opt("--batch-size", type=click.IntRange(1, 1024), default=8, show_default=True, help="Folder runs: images of one shape per pipeline call."),
        opt("--workers", type=click.IntRange(1, 256), default=None, help="Folder runs: decode/encode threads [default: CPUs + 2, at most 8]."),
        opt("--shard-index", type=click.IntRange(min=0), default=0, show_default=True, help="Folder runs: which shard this process does (0-based)."),
        opt("--num-shards", type=click.IntRange(min=1), default=1, show_default=True, help="Folder runs: split the inputs into this many shards (by a hash of their path)."),
        opt("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
            help="Folder runs: local (threads in this process) or ray (Ray Data actors on a cluster; pip install \"imgproc-jax[ray]\")."),
        opt("--ray-address", metavar="ADDR", default=None,
            help="--engine ray: the cluster (HOST:PORT, ray://HOST:PORT or auto) [default: RAY_ADDRESS, else a local one]; unreachable: exit 69."),
        opt("--log-interval", type=FiniteFloatRange(min=0), default=10.0, show_default=True, hidden=True),
    ]):
        wrapper = decorator(wrapper)
    added = params[n_before:]
    params[n_before:] = [p for p in added if not isinstance(p, click.Option)]
    params[:0] = [p for p in added if isinstance(p, click.Option)]
    return wrapper


def mode_option(fn):
    return click.option(
        "--mode", type=click.Choice(MODES), default="reflect", show_default=True,
        help="Boundary mode (scipy.ndimage names).",
    )(fn)
