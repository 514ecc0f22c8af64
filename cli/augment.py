"""``imgproc augment IN OUTDIR --spec SPEC.json --count N --seed S``.

Writes ``N`` augmented variants of every input image to ``OUTDIR/<stem>_<k>.<ext>`` (k =
000 .. N-1, the input's extension) and a contact sheet ``OUTDIR/contact_sheet.png``
(matplotlib grid: one row per input, the original then its variants).

Randomness: variant ``k`` of the ``i``-th input (inputs sorted by path) is sample
``i * N + k`` of the pipeline's key ``jax.random.key(S)``, so the same command gives the
same files, and a variant does not depend on the other inputs' sizes or on ``N`` for
the variants it shares.

Grey images meeting a colour op are converted to RGB (with a warning); an alpha channel
follows the geometric ops (flips, rotations, crops: nearest-neighbour, as a mask) and is
left alone by the others, as in ``imgproc run``; a re-run skips variants that exist.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from imgproc.cli._options import EXIT_CODES
from imgproc.io.run_options import output_extension

SHEET_NAME = "contact_sheet.png"
SHEET_MAX_ROWS = 8
SHEET_MAX_VARIANTS = 8


def _inputs(input):
    from imgproc.io.folder_plan import check_not_url, find_inputs
    from imgproc.errors import InputError

    check_not_url(input)
    p = Path(input)
    if p.is_file():
        return [p]
    if not p.exists() and not any(c in str(input) for c in "*?["):
        raise InputError(input, "no such file or folder")
    _, files = find_inputs(input, recursive=False)
    if not files:
        raise InputError(input, "no images found")
    return files


def _augment_colour(pipe, image, src, **kwargs):
    """:func:`augment_image`; a grey image that meets a colour op (``random_hue``, ...) is
    converted to RGB, with a warning, and its variants are RGB."""
    import numpy as np

    try:
        return augment_image(pipe, image, **kwargs)
    except ValueError as e:
        grey = image.ndim == 2 or image.shape[-1] == 1
        if not grey or "needs an RGB image" not in str(e):
            raise
    click.echo(f"warning: {src}: grey image converted to RGB for the spec's colour ops; its variants are RGB", err=True)
    rgb = np.repeat(image.reshape(*image.shape[:2], 1), 3, axis=2)
    return augment_image(pipe, rgb, **kwargs)


def augment_image(pipe, image, *, key, first_index, count, alpha=None):
    """``count`` variants of one image (H, W) or (H, W, C): samples ``first_index + k``.
    ``alpha`` (H, W, 1), the image's alpha channel, follows each variant's geometric ops
    (:func:`imgproc.io.folder_runner.call_with_alpha`) and is appended to it; a spec whose
    op cannot move it (``rand_augment``, ...) gets variants without alpha (the caller
    warns: :func:`imgproc.io.folder_runner.alpha_plan`)."""
    import numpy as np

    from imgproc.io.folder_runner import ALPHA_DROPPED, alpha_plan, call_with_alpha, join_alpha

    gray = image.ndim == 2
    x = image[..., None] if gray else image
    # a pipeline that starts by setting the size takes the image as a list: images of
    # every size then share a few compiled programs (imgproc.pipeline.variable_size)
    batch = [x] * count if pipe.takes_lists else np.repeat(x[None], count, axis=0)
    plan = alpha_plan(pipe)[0]
    out, alphas = call_with_alpha(pipe, batch, [alpha] * count, plan,
                                  key=key, indices=np.arange(first_index, first_index + count))
    out = np.asarray(out)
    if alpha is not None and plan != ALPHA_DROPPED:
        return np.stack([join_alpha(v, a, False) for v, a in zip(out, alphas)])
    return out[..., 0] if gray and out.shape[-1] == 1 else out


# augment has no --engine: its exit codes without Ray's
@click.command("augment", epilog="\n".join(line for line in EXIT_CODES.split("\n") if "--engine ray" not in line))
@click.argument("input", type=click.Path())
@click.argument("outdir", type=click.Path(file_okay=False))
@click.option("--spec", "spec", required=True, type=click.Path(dir_okay=False), metavar="SPEC",
              help='Pipeline spec: a JSON file holding a list of {"op": NAME, ...options} (random ops '
                   'welcome), or that list itself.')
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
    from imgproc.errors import ImgprocError, OutputError, OutputExistsError

    from imgproc.io.folder_plan import check_folder_name, removed_if_left_empty
    from imgproc.io.loader import read_image
    from imgproc.cli._process import load_spec
    from imgproc.io.folder_runner import alpha_dropped, alpha_plan, save_spec_result, spec_max_value, split_alpha

    pipe = load_spec(os.path.expanduser(spec))
    dropped_by = alpha_plan(pipe)[1]  # an op that the alpha cannot follow (rand_augment, ...)
    files = _inputs(os.path.expanduser(input))
    out = Path(os.path.expanduser(outdir))
    check_folder_name(out, "OUTDIR", "augment writes its variants into")
    if out.exists() and not out.is_dir():
        raise OutputError(out, "exists and is not a folder")
    # a folder this command creates is removed again if nothing was written in it (every input failed)
    ctx.with_resource(removed_if_left_empty(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(out, f"cannot create folder ({e.strerror or e})") from None
    sheet = out / SHEET_NAME
    write_sheet = not no_sheet
    if write_sheet and sheet.exists() and not overwrite:
        click.echo(f"note: {sheet}: exists, not replaced (pass --overwrite to replace it)", err=True)
        write_sheet = False
    key = jax.random.key(seed)
    rows, failures, written, skipped, raced = [], [], 0, 0, 0
    for i, src in enumerate(files):
        ext = output_extension(src)
        dsts = [out / f"{src.stem}_{k:03d}{ext}" for k in range(count)]
        todo = [d for d in dsts if overwrite or not d.exists()]
        skipped += count - len(todo)
        if not todo:  # a re-run: every variant of this image is there already
            continue
        try:
            image = read_image(src, options={})[0]  # augment has no --allow-truncated, --max-pixels: not suggested
            colour, alpha, flat = split_alpha(image)
            colour = colour[..., 0] if flat else colour
            variants = _augment_colour(pipe, colour, src, key=key, first_index=i * count, count=count, alpha=alpha)
            max_value = spec_max_value(pipe, colour.dtype)
            if alpha is not None and dropped_by is not None:
                click.echo(f"warning: {src}: {alpha_dropped(dropped_by)}", err=True)
            for d, v in zip(dsts, variants):
                if d in todo:
                    try:
                        save_spec_result(d, v, max_value=max_value, quality=quality, overwrite=overwrite, source=src)
                        written += 1
                    except OutputExistsError:  # appeared since the check above: another run wrote it
                        raced += 1
        except ImgprocError as e:
            click.echo(f"error: {e}", err=True)
            failures.append((src, e.exit_code))
            continue
        except ValueError as e:  # an op that does not fit this image (e.g. rot90 of a non-square one)
            click.echo(f"error: {src}: {e}", err=True)
            failures.append((src, 2))
            continue
        if len(rows) < SHEET_MAX_ROWS:
            rows.append((src.name, image, list(variants[:SHEET_MAX_VARIANTS])))
    if rows and write_sheet:
        from imgproc import figures

        ncols = 1 + max(len(v) for _, _, v in rows)
        cells, titles = [], []
        for name, image, variants in rows:
            row = [image, *variants] + [np.zeros_like(variants[0])] * (ncols - 1 - len(variants))
            cells += row
            titles += [name] + [f"#{k}" for k in range(len(variants))] + [""] * (ncols - 1 - len(variants))
        tmp = sheet.with_name(f".{sheet.name}.tmp.png")
        figures.contact_sheet(cells, tmp, titles=titles, ncols=ncols)
        tmp.replace(sheet)
    images = len(files) - len(failures)
    click.echo(f"{written} variant{'s' * (written != 1)} of {images} image{'s' * (images != 1)} written to {out}"
               + (f", {skipped} skipped (output exists; --overwrite replaces them)" if skipped else "")
               + (f", {raced} skipped (written by another run)" if raced else "")
               + ("" if not write_sheet or not rows else f"; contact sheet {sheet}"))
    if failures and len(failures) == len(files):
        ctx.exit(failures[0][1])
    if failures:
        click.echo(f"{len(failures)} of {len(files)} inputs failed", err=True)
        ctx.exit(1)
    ctx.exit(0)
