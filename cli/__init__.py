"""The ``imgproc`` command (click). Thin: every command builds a :class:`imgproc.Pipeline`
and moves images in and out of it with :func:`imgproc.load_image` / :func:`imgproc.save_image`.
"""

from __future__ import annotations

import functools
import json
import sys
import traceback
from pathlib import Path

import click

from imgproc.host_memory import reuse_host_memory

EXIT_CODES = """\b
Exit codes:
  0    all done
  1    a batch finished but some inputs failed (summary printed)
  2    usage error
  65   input is not a valid image (corrupt, truncated, unsupported, too many pixels)
  66   input missing or unreadable
  73   output cannot be created (exists without --overwrite, same file as input,
       unknown extension, folder not writable)
  74   I/O error while writing (disk full)
  70   internal error (one line; the traceback with --debug)
  130  interrupted
"""

MODES = ("reflect", "mirror", "nearest", "wrap", "constant")


def _fail(message: str, code: int):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def handle_errors(fn):
    """Turn every failure into one ``error: ...`` line and the design's exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        ctx = click.get_current_context()
        debug = ctx.find_root().params.get("debug", False)
        from imgproc.errors import ImgprocError

        try:
            return fn(*args, **kwargs)
        except ImgprocError as e:
            _fail(str(e), e.exit_code)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except ValueError as e:  # a bad option value that click could not check
            _fail(str(e), 2)
        except Exception as e:  # noqa: BLE001 - the one place internal errors are reported
            if debug:
                traceback.print_exc()
            _fail(f"internal error: {type(e).__name__}: {e}" + ("" if debug else " (run with --debug for the traceback)"), 70)

    return wrapper


def load_spec(spec, **options):
    """The :class:`imgproc.Pipeline` in the JSON file ``spec`` (``options`` go to
    ``Pipeline.from_spec``). An unreadable file is an input error (exit 3); bad JSON or an
    invalid stage is a usage error (exit 2), naming the file."""
    import imgproc
    from imgproc.errors import InputError

    try:
        text = Path(spec).read_text()
    except FileNotFoundError:
        raise InputError(spec, "no such file") from None
    except OSError as e:
        raise InputError(spec, f"cannot read ({e.strerror or e})") from None
    try:
        return imgproc.Pipeline.from_spec(text, **options)
    except json.JSONDecodeError as e:
        _fail(f"{spec}: not valid JSON ({e})", 2)
    except (ValueError, TypeError) as e:
        _fail(f"{spec}: {e}", 2)


def _run_options(quality, overwrite):
    """The folder/loader options of the current command (stored by :func:`io_options`)."""
    from imgproc.cli._batch import RunOptions

    meta = click.get_current_context().meta.get("imgproc.io", {})
    return RunOptions(quality=quality, overwrite=overwrite, **meta)


def _process_file(pipeline, src, dst, *, quality, overwrite, key=None):
    """Run ``pipeline`` from ``src`` to ``dst``: one file (load, run, save atomically;
    output checks first so no work is done for an output that cannot be written), or a
    folder/glob into an output folder (:mod:`imgproc.cli._batch`; exits 0, 1, 74 or 130).
    ``key``: for pipelines with random stages (image ``i`` of the sorted inputs gets
    ``fold_in(key, i)``)."""
    from imgproc._cache import enable_compilation_cache
    from imgproc._io import output_format, same_file, save_image
    from imgproc._loader import read_image
    from imgproc.cli._batch import _join_alpha, _split_alpha, is_folder_input, run_folder
    from imgproc.errors import OutputError

    opts = _run_options(quality, overwrite)
    if is_folder_input(src):
        enable_compilation_cache()
        code = run_folder(pipeline, src, dst, opts, key=key)
        sys.exit(code)
    src, dst = Path(src), Path(dst)
    if dst.is_dir():
        dst = dst / (src.stem + (opts.out_format or (src.suffix.lower() if src.suffix.lower() in _out_exts() else ".png")))
    output_format(dst)
    if same_file(src, dst):
        raise OutputError(dst, "is the input file itself; choose another output")
    if dst.exists() and not overwrite:
        raise OutputError(dst, "exists; pass --overwrite to replace it")
    folder = dst.parent if str(dst.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(dst, f"folder {folder} does not exist")

    def warn(path, message):
        if not opts.quiet:
            click.echo(f"warning: {path}: {message}", err=True)

    image, info = read_image(src, max_pixels=opts.max_pixels, allow_truncated=opts.allow_truncated, warn=warn)
    enable_compilation_cache()
    colour, alpha, flat = _split_alpha(image)
    if key is not None:
        import numpy as np

        result = pipeline(colour[None], key=key, indices=np.zeros(1, np.int32))[0]
    else:
        result = pipeline(colour)
    result = _join_alpha(result, alpha, flat)
    save_image(dst, result, quality=quality, overwrite=overwrite, source=src,
               exif=None if opts.strip else info.exif, icc_profile=None if opts.strip else info.icc_profile)
    return dst


def _out_exts():
    from imgproc._io import OUTPUT_FORMATS

    return OUTPUT_FORMATS


_RUN_OPTION_NAMES = ("recursive", "out_format", "max_pixels", "allow_truncated", "strip", "fail_fast",
                     "quiet", "log_format", "batch_size", "workers", "shard_index", "num_shards", "log_interval")


def _format_option(value):
    if value is None:
        return None
    ext = value.lower() if value.startswith(".") else "." + value.lower()
    from imgproc._io import OUTPUT_FORMATS

    if ext not in OUTPUT_FORMATS:
        raise click.BadParameter(f"{value!r} is not one of {', '.join(sorted(e[1:] for e in OUTPUT_FORMATS))}")
    return ext


def io_options(fn):
    """IN, OUT and the options every file command shares. The folder/loader options are
    stored in the click context (read by :func:`_process_file`), so a command's function
    takes only ``input, output, quality, overwrite`` from them."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        meta = {name: kwargs.pop(name) for name in _RUN_OPTION_NAMES if name in kwargs}
        click.get_current_context().meta["imgproc.io"] = meta
        return fn(*args, **kwargs)

    from imgproc._loader import DEFAULT_MAX_PIXELS

    opt = click.option
    for decorator in reversed([
        click.argument("input", type=click.Path()),
        click.argument("output", type=click.Path()),
        opt("--overwrite", is_flag=True, help="Replace outputs that exist (atomically); without it they are skipped in folder runs."),
        opt("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG/WebP quality."),
        opt("-r", "--recursive", is_flag=True, help="Folder input: include subfolders (the output mirrors the tree)."),
        opt("--format", "out_format", metavar="EXT", default=None, callback=lambda c, p, v: _format_option(v),
            help="Folder runs: output format for every file (jpg, png, tif, webp, bmp); default: the input's extension (png for gif)."),
        opt("--max-pixels", type=click.IntRange(min=1), default=DEFAULT_MAX_PIXELS, show_default=True,
            help="Refuse images with more pixels (checked before decoding)."),
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
        opt("--log-interval", type=click.FloatRange(min=0), default=10.0, show_default=True, hidden=True),
    ]):
        wrapper = decorator(wrapper)
    return wrapper


def mode_option(fn):
    return click.option(
        "--mode", type=click.Choice(MODES), default="reflect", show_default=True,
        help="Boundary mode (scipy.ndimage names).",
    )(fn)


@click.group(epilog=EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.version_option(package_name="imgproc-jax", prog_name="imgproc")
def main(debug):
    """imgproc: image filters and pipelines on JAX.

    IN is an image file, a folder (--recursive for subfolders) or a quoted glob
    ("photos/**/*.jpg"); OUT is the file to write (format from its extension: .jpg .jpeg
    .png .tif .tiff .webp .bmp) or, for a folder or glob, the output folder, which mirrors
    the input tree. Inputs are never modified; outputs are written atomically; existing
    outputs are skipped unless --overwrite. A folder run logs each failing file, goes on,
    and ends with a summary (exit 1 when some failed). See docs/cli.md.
    """
    # this process owns its allocator: keep freed image-sized buffers for reuse instead of
    # having the kernel zero fresh pages for each one (imgproc.host_memory)
    reuse_host_memory()


@main.command(epilog=EXIT_CODES)
@io_options
@click.option("--method", type=click.Choice(["auto", "nl-means", "bm3d", "tv", "bilateral", "median", "chapter"]),
              default="auto", show_default=True,
              help="auto: estimate the noise per image; salt-and-pepper -> median of the impulses, "
                   "otherwise NL-means with h = 0.6 sigma. chapter: the seed chapter's Gaussian + sharpen.")
@click.option("--noise-sigma", type=click.FloatRange(min=0), default=None,
              help="Noise sigma in the image's units (0..255 for 8-bit) instead of the estimate "
                   "(auto, nl-means, bm3d, bilateral).")
@click.option("--verbose", is_flag=True, help="Print the noise estimate and the chosen method (one line per image on stderr).")
@click.option("--sigma", type=click.FloatRange(min=0), default=1.0, show_default=True, help="chapter: Gaussian sigma in pixels.")
@click.option("--size", type=int, default=None, help="chapter: Gaussian kernel side (odd) [default: 5]; median: window side [default: 3].")
@click.option("--sharpen/--no-sharpen", default=True, show_default=True, help="chapter: sharpen after the blur.")
@mode_option
@handle_errors
def denoise(input, output, quality, overwrite, method, noise_sigma, verbose, sigma, size, sharpen, mode):
    """Denoise IN into OUT (default --method auto; see docs/cli.md and the README)."""
    from imgproc.cli import _denoise
    from imgproc.cli._batch import is_folder_input

    pipe = _denoise.build(method, noise_sigma=noise_sigma, sigma=sigma, size=size, sharpen=sharpen, mode=mode)
    if verbose:
        pipe = _denoise.verbose(pipe, input, method, is_folder_input(input))
    _process_file(pipe, input, output, quality=quality, overwrite=overwrite)


@main.command(epilog=EXIT_CODES)
@io_options
@click.option("--sigma", type=click.FloatRange(min=0), default=2.0, show_default=True, help="Gaussian sigma (with --kind gaussian).")
@click.option("--kind", type=click.Choice(["gaussian", "box"]), default="gaussian", show_default=True)
@click.option("--size", type=int, default=None, help="Kernel side (odd); Gaussian default: scipy's rule, box default 5.")
@mode_option
@handle_errors
def blur(input, output, quality, overwrite, sigma, kind, size, mode):
    """Blur IN into OUT with a Gaussian (default) or a box filter."""
    import imgproc

    if kind == "gaussian":
        stage = {"op": "gaussian_blur", "sigma": sigma, "mode": mode}
        if size is not None:
            stage["size"] = size
    else:
        stage = {"op": "box_blur", "size": 5 if size is None else size, "mode": mode}
    _process_file(imgproc.Pipeline([stage], bucket=True), input, output, quality=quality, overwrite=overwrite)


@main.command("sharpen", epilog=EXIT_CODES)
@io_options
@click.option("--size", type=int, default=5, show_default=True, help="Kernel side (odd).")
@click.option("--center", type=float, default=None, help="Centre weight before normalising (default 2*size^2).")
@mode_option
@handle_errors
def sharpen_cmd(input, output, quality, overwrite, size, center, mode):
    """Sharpen IN into OUT with the seed chapter's kernel (-1 around a large centre)."""
    import imgproc

    stage = {"op": "sharpen", "size": size, "mode": mode}
    if center is not None:
        stage["center"] = center
    _process_file(imgproc.Pipeline([stage], bucket=True), input, output, quality=quality, overwrite=overwrite)


@main.command(epilog=EXIT_CODES)
@click.argument("spec", type=click.Path(dir_okay=False))
@io_options
@handle_errors
def run(spec, input, output, quality, overwrite):
    """Run the pipeline in SPEC (a JSON list of {"op": NAME, ...options}) on IN into OUT."""
    _process_file(load_spec(spec, bucket=True), input, output, quality=quality, overwrite=overwrite)


@main.command()
@handle_errors
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


from imgproc.cli.augment import augment as _augment  # noqa: E402 - imgproc augment

main.add_command(_augment)
