"""The ``imgproc`` command (click). Thin: every command builds a :class:`imgproc.Pipeline`
and hands it, with the :class:`~imgproc.cli._options.RunOptions` that :func:`io_options`
built, to :func:`~imgproc.cli._process.process`, which moves images in and out of it.

How it is put together (see docs/cli.md): :mod:`._options` (shared options, one
``RunOptions`` in ``ctx.obj``, the output extension rule), :mod:`._group` (every error to
one line and an exit code), :mod:`._plan` (inputs to jobs, output checks), :mod:`._runner`
(decode, batch and write stages), :mod:`._report` (what is said on stderr),
:mod:`._process` (a file or a folder through the runner), :mod:`.augment`.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import click

from imgproc.cli._group import ImgprocGroup
from imgproc.cli._options import EXIT_CODES, FiniteFloatRange, MODES, io_options, mode_option
from imgproc.io.interrupts import INTERRUPTS, run_at_leave
from imgproc.io.run_options import RunOptions, output_extension

__all__ = ["cli", "main", "EXIT_CODES", "MODES", "RunOptions", "io_options", "mode_option", "output_extension",
           "load_spec", "process"]


def __getattr__(name):
    # the runner imports NumPy and the loader: loaded when a command runs, not at start-up
    if name in ("load_spec", "process"):
        from imgproc.cli import _process

        return getattr(_process, name)
    raise AttributeError(f"module 'imgproc.cli' has no attribute {name!r}")


def main():
    """The console entry point (``imgproc = "imgproc.cli:main"``).

    The signal handlers go in first: this module and the modules it imports at the top
    use the standard library and click only, and NumPy and JAX (most of the start-up
    time) are imported by the command that needs them, under the handlers. A Ctrl-C or
    SIGTERM at any point after this line ends the command with 130; only Python's own
    start-up (tens of milliseconds) comes before it."""
    INTERRUPTS.hard_exit = True  # no safe point within GRACE_S of a signal: leave with 130 anyway
    try:
        with INTERRUPTS:  # Ctrl-C and SIGTERM are recorded and honoured at safe points
            from imgproc.cpu import reuse_host_memory

            # this process owns its allocator: keep freed image-sized buffers for reuse
            # instead of having the kernel zero fresh pages for each one (imgproc.cpu.host_memory)
            reuse_host_memory()
            cli()
    except KeyboardInterrupt:  # came after the command's last safe point
        click.echo("error: interrupted", err=True)
        _leave(130)
    except SystemExit as e:
        if e.code == 130:
            _leave(130)
        raise


def _run(pipe, opts, *, key=None) -> int:
    """Run ``pipe`` over the command's inputs (imports the runner, NumPy and the loader)."""
    from imgproc.cli._process import process

    return process(pipe, opts, key=key)


def _leave(code):
    """Exit with ``code`` without the interpreter's shutdown, which can crash while XLA
    threads still work (after an interrupt everything is cleaned up and reported; a write
    still in flight has its temporary file removed, :func:`run_at_leave`)."""
    run_at_leave()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


DOCS_EPILOG = """\b
Documentation (installed with the package; no checkout needed):
  imgproc docs guide         the Python API and its semantics (modes, dtypes, keys)
  imgproc docs cli           the command line: inputs, outputs, options, exit codes
  imgproc docs augment       training augmentation (imgproc augment, the JAX API)
  imgproc docs scale         folders, Ray, Grain, several devices, memory
  imgproc docs performance   the current measurements against the other libraries
  imgproc docs architecture  the layers of the package, for contributors

""" + EXIT_CODES


@click.group(cls=ImgprocGroup, epilog=DOCS_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.version_option(package_name="imgproc-jax", prog_name="imgproc")
def cli(debug):
    """imgproc: image filters and pipelines on JAX.

    IN is an image file, a folder (--recursive for subfolders) or a quoted glob
    ("photos/**/*.jpg"), or several of them (imgproc blur *.jpg outdir: the last argument
    is OUT); OUT is the file to write (format from its extension: .jpg .jpeg .jpe .png
    .tif .tiff .webp .bmp) or, for a folder, a glob or several IN, the output folder,
    which mirrors the input tree. Random specs: imgproc run SPEC IN OUT --seed N; imgproc
    ops lists the ops. Inputs are never modified; outputs are written atomically; existing
    outputs are skipped unless --overwrite. A folder run logs each failing file, goes on,
    and ends with a summary (exit 1 when some failed). Documentation: imgproc docs cli.
    """


@cli.command(epilog=EXIT_CODES)
@io_options
@click.option("--method", type=click.Choice(["auto", "nl-means", "bm3d", "tv", "bilateral", "median", "chapter"]),
              default="auto", show_default=True,
              help="auto: estimate the noise per image; salt-and-pepper -> median of the impulses, "
                   "otherwise NL-means with h = 0.6 sigma. chapter: the seed chapter's Gaussian + sharpen.")
@click.option("--noise-sigma", type=FiniteFloatRange(min=0), default=None,
              help="Noise sigma in the image's units (0..255 for 8-bit) instead of the estimate "
                   "(auto, nl-means, bm3d, bilateral).")
@click.option("--verbose", is_flag=True, help="Print the noise estimate and the chosen method (one line per image on stderr).")
@click.option("--sigma", type=FiniteFloatRange(min=0), default=1.0, show_default=True, help="chapter: Gaussian sigma in pixels.")
@click.option("--size", type=int, default=None, help="chapter: Gaussian kernel side (odd) [default: 5]; median: window side [default: 3].")
@click.option("--sharpen/--no-sharpen", default=True, show_default=True, help="chapter: sharpen after the blur.")
@mode_option
@click.pass_context
def denoise(ctx, method, noise_sigma, verbose, sigma, size, sharpen, mode):
    """Denoise IN (a file, folder, glob, or several) into OUT (default --method auto; see `imgproc docs cli`)."""
    from imgproc.cli import _denoise

    from imgproc.io.memory import DENOISE_WORK_BYTES

    _denoise.check_options(ctx, method)  # an option the method does not use is an error, not ignored
    opts = ctx.obj = dataclasses.replace(ctx.obj, work_bytes_per_value=DENOISE_WORK_BYTES)  # --max-memory's estimate
    pipe = _denoise.build(method, noise_sigma=noise_sigma, sigma=sigma, size=size, sharpen=sharpen, mode=mode)
    if verbose:
        pipe = _denoise.Verbose(pipe, method, opts.log_format, noise_sigma)
    ctx.exit(_run(pipe, opts))


@cli.command(epilog=EXIT_CODES)
@io_options
@click.option("--sigma", type=FiniteFloatRange(min=0), default=2.0, show_default=True, help="Gaussian sigma (with --kind gaussian).")
@click.option("--kind", type=click.Choice(["gaussian", "box"]), default="gaussian", show_default=True)
@click.option("--size", type=int, default=None, help="Kernel side (odd); Gaussian default: scipy's rule, box default 5.")
@mode_option
@click.pass_context
def blur(ctx, sigma, kind, size, mode):
    """Blur IN (a file, folder, glob, or several) into OUT with a Gaussian (default) or a box filter."""
    import imgproc

    if kind == "gaussian":
        stage = {"op": "gaussian_blur", "sigma": sigma, "mode": mode}
        if size is not None:
            stage["size"] = size
    else:
        stage = {"op": "box_blur", "size": 5 if size is None else size, "mode": mode}
    ctx.exit(_run(imgproc.Pipeline([stage], bucket="auto"), ctx.obj))


@cli.command("sharpen", epilog=EXIT_CODES)
@io_options
@click.option("--size", type=int, default=5, show_default=True, help="Kernel side (odd).")
@click.option("--center", type=float, default=None, help="Centre weight before normalising (default 2*size^2).")
@mode_option
@click.pass_context
def sharpen_cmd(ctx, size, center, mode):
    """Sharpen IN (a file, folder, glob, or several) into OUT with the seed chapter's kernel (-1 around a large centre)."""
    import imgproc

    stage = {"op": "sharpen", "size": size, "mode": mode}
    if center is not None:
        stage["center"] = center
    ctx.exit(_run(imgproc.Pipeline([stage], bucket="auto"), ctx.obj))


@cli.command(epilog=EXIT_CODES)
@click.argument("spec", type=click.Path(dir_okay=False))
@io_options
@click.option("--seed", type=int, default=None,
              help="Random seed, needed by a spec with random ops (imgproc ops marks them): input i of "
                   "the sorted inputs gets sample i of jax.random.key(SEED), whatever the shard or batch.")
@click.pass_context
def run(ctx, spec, seed):
    """Run the pipeline in SPEC on IN into OUT: SPEC is a JSON file holding a list of
    {"op": NAME, ...options}, or that list itself. List the ops and their options with
    `imgproc ops`.

    \b
    Example:
      imgproc run '[{"op": "gaussian_blur", "sigma": 2}]' in.jpg out.jpg
    """
    from imgproc.cli._process import load_spec, spec_label

    pipe = load_spec(spec, bucket="auto")
    key = None
    if pipe.is_random:
        if seed is None:
            raise ValueError(f"{spec_label(spec)}: has random ops; pass --seed N (the same N gives the same outputs)")
        import jax

        key = jax.random.key(seed)
    ctx.exit(_run(pipe, ctx.obj, key=key))


@cli.command()
def ops():
    """List the ops a spec can use ({"op": NAME, ...}) and their options (* required)."""
    import imgproc

    for name in imgproc.registered_ops():
        info = imgproc.op_info(name)
        allowed, required = info.option_names()
        options = ", ".join(o + ("*" if o in required else "") for o in sorted(allowed)) or "(none)"
        click.echo(f"{name}{' (random)' if info.random else ''}: {options}")


@cli.command()
def info():
    """Print versions, the JAX backend and its devices."""
    from importlib import metadata

    import jax

    import imgproc

    click.echo(f"imgproc {imgproc.__version__}")
    click.echo(f"python {sys.version.split()[0]}")
    for name in ("jax", "jaxlib", "numpy", "scipy", "pillow", "click"):
        click.echo(f"{name} {metadata.version(name)}")
    click.echo(f"backend {jax.default_backend()}")
    for d in jax.devices():
        click.echo(f"device {d.id}: {d.platform} {d.device_kind}")


DOC_PAGES = {"guide": "guide.md", "cli": "cli.md", "augment": "augment.md", "scale": "scale.md",
             "performance": "performance.md", "architecture": "architecture.md"}


@cli.command("docs")
@click.argument("page", type=click.Choice(sorted(DOC_PAGES)), default="cli")
def docs_cmd(page):
    """Print the documentation PAGE (guide, cli, augment, scale, performance or architecture;
    default cli), installed with the
    package: through a pager on a terminal, plain otherwise."""
    from importlib.resources import files

    text = (files("imgproc.docs") / DOC_PAGES[page]).read_text(encoding="utf-8")
    if sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


from imgproc.cli.augment import augment as _augment  # noqa: E402 - imgproc augment

cli.add_command(_augment)
