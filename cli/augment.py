"""``imgproc augment IN OUTDIR --spec SPEC.json --count N --seed S``.

Writes ``N`` augmented variants of every input image to ``OUTDIR/<stem>_<k>.<ext>`` (k =
000 .. N-1, the input's extension) and a contact sheet ``OUTDIR/contact_sheet.png``
(matplotlib grid: one row per input, the original then its variants).

Randomness: variant ``k`` of the ``i``-th input (inputs sorted by path) is sample
``i * N + k`` of the pipeline's key ``jax.random.key(S)``, so the same command gives the
same files, and a variant does not depend on the other inputs' sizes or on ``N`` for
the variants it shares.
"""

from __future__ import annotations

from pathlib import Path

import click

from imgproc.cli._options import EXIT_CODES, output_extension
from imgproc.cli._process import load_spec

SHEET_NAME = "contact_sheet.png"
SHEET_MAX_ROWS = 8
SHEET_MAX_VARIANTS = 8


def _inputs(input):
    from imgproc.cli._plan import find_inputs
    from imgproc.errors import InputError

    p = Path(input)
    if p.is_file():
        return [p]
    if not p.exists() and not any(c in str(input) for c in "*?["):
        raise InputError(input, "no such file or folder")
    _, files = find_inputs(input, recursive=False)
    if not files:
        raise InputError(input, "no images found")
    return files


def augment_image(pipe, image, *, key, first_index, count):
    """``count`` variants of one image (H, W) or (H, W, C): samples ``first_index + k``."""
    import numpy as np

    gray = image.ndim == 2
    x = image[..., None] if gray else image
    batch = np.repeat(x[None], count, axis=0)
    out = np.asarray(pipe(batch, key=key, indices=np.arange(first_index, first_index + count)))
    return out[..., 0] if gray and out.shape[-1] == 1 else out


@click.command("augment", epilog=EXIT_CODES)
@click.argument("input", type=click.Path())
@click.argument("outdir", type=click.Path(file_okay=False))
@click.option("--spec", "spec", required=True, type=click.Path(dir_okay=False),
              help='Pipeline spec: a JSON list of {"op": NAME, ...options} (random ops welcome).')
@click.option("--count", type=click.IntRange(1, 10000), default=8, show_default=True, help="Variants per input.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (jax.random.key(SEED)).")
@click.option("--quality", type=click.IntRange(1, 100), default=95, show_default=True, help="JPEG/WebP quality.")
@click.option("--overwrite", is_flag=True, help="Replace existing variants and contact sheet.")
@click.option("--no-sheet", is_flag=True, help="Do not write the contact sheet.")
@click.pass_context
def augment(ctx, input, outdir, spec, count, seed, quality, overwrite, no_sheet):
    """Write COUNT augmented variants of each image in IN (file, folder or glob) to OUTDIR,
    plus OUTDIR/contact_sheet.png to look at them.

    \b
    Example spec (augment.json):
      [{"op": "random_flip_left_right"}, {"op": "random_rotate", "max_degrees": 20},
       {"op": "random_brightness"}, {"op": "random_hue"}]
    """
    import jax
    import numpy as np

    import imgproc
    from imgproc.errors import ImgprocError, OutputError

    pipe = load_spec(spec)
    files = _inputs(input)
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise OutputError(out, "exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(out, f"cannot create folder ({e.strerror or e})") from None
    sheet = out / SHEET_NAME
    if not no_sheet and sheet.exists() and not overwrite:
        raise OutputError(sheet, "exists; pass --overwrite to replace it")
    key = jax.random.key(seed)
    rows, failures, written = [], [], 0
    for i, src in enumerate(files):
        ext = output_extension(src)
        dsts = [out / f"{src.stem}_{k:03d}{ext}" for k in range(count)]
        try:
            existing = [d for d in dsts if d.exists()]
            if existing and not overwrite:
                raise OutputError(existing[0], "exists; pass --overwrite to replace it")
            image = imgproc.load_image(src)
            if image.ndim == 3 and image.shape[-1] in (2, 4):  # drop alpha: colour ops need RGB or grey
                click.echo(f"warning: {src}: alpha channel dropped", err=True)
                image = image[..., :-1]
            variants = augment_image(pipe, image, key=key, first_index=i * count, count=count)
            for d, v in zip(dsts, variants):
                imgproc.save_image(d, v, quality=quality, overwrite=overwrite, source=src)
                written += 1
        except ImgprocError as e:
            click.echo(f"error: {e}", err=True)
            failures.append((src, e.exit_code))
            continue
        except ValueError as e:  # an op that does not fit this image (e.g. rot90 of a non-square one)
            click.echo(f"error: {src}: {e}", err=True)
            failures.append((src, 2))
            continue
        if len(rows) < SHEET_MAX_ROWS:
            rows.append((src.name, image, variants[:SHEET_MAX_VARIANTS]))
    if rows and not no_sheet:
        from imgproc import figures

        ncols = 1 + max(len(v) for _, _, v in rows)
        cells, titles = [], []
        for name, image, variants in rows:
            row = [image, *variants] + [np.zeros_like(image)] * (ncols - 1 - len(variants))
            cells += row
            titles += [name] + [f"#{k}" for k in range(len(variants))] + [""] * (ncols - 1 - len(variants))
        tmp = sheet.with_name(f".{sheet.name}.tmp.png")
        figures.contact_sheet(cells, tmp, titles=titles, ncols=ncols)
        tmp.replace(sheet)
    click.echo(f"{written} variants of {len(files) - len(failures)} images written to {out}"
               + ("" if no_sheet or not rows else f"; contact sheet {sheet}"))
    if failures and len(failures) == len(files):
        ctx.exit(failures[0][1])
    if failures:
        click.echo(f"{len(failures)} of {len(files)} inputs failed", err=True)
        ctx.exit(1)
    ctx.exit(0)
