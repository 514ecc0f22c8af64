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


def _process_file(pipeline, src, dst, *, quality, overwrite):
    """Load ``src``, run ``pipeline``, save ``dst`` atomically. Output checks come first so
    no work is done for an output that cannot be written."""
    import imgproc
    from imgproc._cache import enable_compilation_cache
    from imgproc._io import output_format, same_file
    from imgproc.errors import OutputError

    src, dst = Path(src), Path(dst)
    output_format(dst)
    if same_file(src, dst):
        raise OutputError(dst, "is the input file itself; choose another output")
    if dst.exists() and not overwrite:
        raise OutputError(dst, "exists; pass --overwrite to replace it")
    image = imgproc.load_image(src)
    enable_compilation_cache()
    result = pipeline(image)
    imgproc.save_image(dst, result, quality=quality, overwrite=overwrite, source=src)
    return dst


def io_options(fn):
    fn = click.option("--overwrite", is_flag=True, help="Replace OUT if it exists (atomically).")(fn)
    fn = click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG/WebP quality.")(fn)
    fn = click.argument("output", type=click.Path(dir_okay=False))(fn)
    fn = click.argument("input", type=click.Path(dir_okay=False))(fn)
    return fn


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

    IN is an image file, OUT the file to write (format from its extension: .jpg .jpeg
    .png .tif .tiff .webp .bmp). Inputs are never modified; outputs are written atomically.
    """


@main.command(epilog=EXIT_CODES)
@io_options
@click.option("--sigma", type=click.FloatRange(min=0), default=1.0, show_default=True, help="Gaussian sigma in pixels.")
@click.option("--size", type=int, default=5, show_default=True, help="Gaussian kernel side (odd).")
@click.option("--sharpen/--no-sharpen", default=True, show_default=True, help="Sharpen after the blur.")
@mode_option
@handle_errors
def denoise(input, output, quality, overwrite, sigma, size, sharpen, mode):
    """Denoise IN into OUT: Gaussian blur then the 5x5 sharpen (the seed chapter's recipe)."""
    from imgproc import presets

    pipe = presets.denoise(sigma=sigma, size=size, sharpen=sharpen, mode=mode, bucket=True)
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
    import imgproc
    from imgproc.errors import InputError

    try:
        text = Path(spec).read_text()
    except FileNotFoundError:
        raise InputError(spec, "no such file") from None
    except OSError as e:
        raise InputError(spec, f"cannot read ({e.strerror or e})") from None
    try:
        pipe = imgproc.Pipeline.from_spec(text, bucket=True)
    except json.JSONDecodeError as e:
        _fail(f"{spec}: not valid JSON ({e})", 2)
    except (ValueError, TypeError) as e:
        _fail(f"{spec}: {e}", 2)
    _process_file(pipe, input, output, quality=quality, overwrite=overwrite)


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
