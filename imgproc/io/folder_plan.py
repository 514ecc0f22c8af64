"""Which inputs go to which outputs: the :class:`Job` list of a run.

A single file IN is one job (:func:`plan_file`); a folder or glob is one job per image
file, outputs mirroring the input tree under OUT (:func:`plan_folder`). Both check the
output before any work is done and raise :class:`imgproc.errors.ImgprocError` (or
``click.UsageError``) when it cannot be written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import zlib
from pathlib import Path

import click

from imgproc.errors import InputError, OutputError
from imgproc.io.codec import output_format, same_file
from imgproc.io.interrupts import at_leave
from imgproc.io.run_options import RunOptions, output_extension

# Files picked from a folder (the format itself is then read from the bytes).
IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".jpe", ".png", ".tif", ".tiff", ".webp", ".bmp", ".gif"}
_MAGIC = set("*?[")


@dataclasses.dataclass
class Job:
    src: Path
    dst: Path
    rel: str = ""
    index: int = 0  # position in the sorted list of all inputs (before sharding): random key index
    collides_with: Path | None = None  # an earlier input with the same output path


def is_folder_input(input) -> bool:
    p = Path(input)
    return p.is_dir() or (not p.exists() and _is_glob(input))


def is_folder_run(opts: RunOptions) -> bool:
    """Whether ``opts`` is a run into an output folder: several IN, or a folder or glob IN."""
    return len(opts.inputs) > 1 or is_folder_input(opts.input)


def check_not_url(input):
    """A URL given as IN: :class:`InputError` (exit 66) saying URLs are not read."""
    if str(input).lower().startswith(("http://", "https://", "ftp://")):
        raise InputError(input, "URLs are not read; download the file first and give its path")


def check_paths(opts: RunOptions):
    """Refuse, before anything is read, paths that would silently do something else: an
    empty IN or OUT (``""`` is the current folder), a URL as IN, and a folder run whose
    OUT looks like an image file (``out.jpg``). A ``ValueError`` (usage error, exit 2)
    or an :class:`InputError`."""
    for i in opts.inputs or (opts.input,):
        if not str(i).strip():
            raise ValueError("IN is an empty path; give an image file, a folder or a glob (use . for the current folder)")
        check_not_url(i)
    if not str(opts.output).strip():
        raise ValueError("OUT is an empty path; give an output file, or a folder for a folder run")
    if is_folder_run(opts):
        what = ("several inputs need" if len(opts.inputs) > 1
                else f"a {'folder' if Path(opts.input).is_dir() else 'glob'} input needs")
        check_folder_name(opts.output, "OUT", what)


def check_folder_name(out, name: str, what: str):
    """Refuse an output folder ``out`` (not there yet) named like an image file
    (``out.jpg``): the user most likely meant a file. ``ValueError`` (exit 2) naming
    ``name`` and saying ``what`` needs a folder."""
    if not Path(out).exists() and Path(out).suffix.lower() in IMAGE_EXTENSIONS:
        raise ValueError(f"{name} {str(out)!r} looks like an image file, but {what} an output folder; "
                         "give a folder name (it is created)")


def _is_glob(input) -> bool:
    return any(c in str(input) for c in _MAGIC)


def _glob_base(pattern: str) -> Path:
    base = []
    for part in Path(pattern).parts:
        if _is_glob(part):
            break
        base.append(part)
    return Path(*base) if base else Path(".")


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def find_inputs(input, *, recursive: bool, exclude: Path | None = None) -> tuple[Path, list[Path]]:
    """(base folder, sorted input files). Folders give files with an image extension
    (hidden files skipped); globs give every regular file they match."""
    p = Path(input)
    if p.is_dir():
        base = p
        it = p.rglob("*") if recursive else p.iterdir()
        files = [f for f in it if f.suffix.lower() in IMAGE_EXTENSIONS and not f.name.startswith(".")
                 and not any(part.startswith(".") for part in f.relative_to(p).parts[:-1])]
    else:
        base = _glob_base(str(input))
        files = [Path(f) for f in glob.glob(str(input), recursive=True)]
    files = [f for f in files if f.is_file() and not f.name.endswith(".imgproc-tmp")]
    if exclude is not None and exclude.exists():
        files = [f for f in files if not _inside(f, exclude)]
    return base, sorted(files, key=lambda f: f.relative_to(base).as_posix())


def plan_file(opts: RunOptions) -> Job:
    """The one job of a file IN: OUT, or ``OUT/<name>`` when OUT is a folder. Raises
    :class:`OutputError` for an output that cannot be written (unknown extension, the
    input itself, exists without ``overwrite``, no such folder)."""
    src, dst = Path(opts.input), Path(opts.output)
    if str(opts.output).endswith(("/", os.sep)) and not dst.is_dir():
        raise OutputError(opts.output, "is a file, not a folder" if dst.exists() else "folder does not exist")
    if dst.is_dir():
        dst = dst / (src.stem + output_extension(src, opts.out_format))
    folder = dst.parent if str(dst.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(dst, f"{folder} is a file, not a folder" if folder.exists() else f"folder {folder} does not exist")
    output_format(dst)
    if same_file(src, dst):
        raise OutputError(dst, "is the input file itself; choose another output")
    if dst.exists() and not opts.overwrite:
        raise OutputError(dst, "exists; pass --overwrite to replace it")
    return Job(src, dst, src.name, 0)


def _sources(opts: RunOptions, out: Path) -> list[tuple[Path, Path]]:
    """(input file, its path relative to its base) for every IN, in the order given; a
    folder or glob IN gives its files sorted. Among several IN, one that is neither a
    folder nor a glob is a file job even when it is missing or unreadable: the run reports
    it as failed (66) and does the others, as for a bad file in a folder."""
    found = []
    for input in opts.inputs or (opts.input,):
        p = Path(input)
        if len(opts.inputs) > 1 and not p.is_dir() and not _is_glob(input):
            found.append((p, Path(p.name)))
            continue
        if not p.is_dir() and not _is_glob(input):
            raise InputError(input, "no such file or folder")
        base, files = find_inputs(input, recursive=opts.recursive, exclude=out)
        if not files and len(opts.inputs) <= 1:
            raise InputError(input, "no image files found" + ("" if opts.recursive or not p.is_dir() else " (use --recursive for subfolders)"))
        found += [(f, f.relative_to(base)) for f in files]
    if not found:
        raise InputError(opts.input, "no image files found")
    return found


def plan_folder(opts: RunOptions) -> list[Job]:
    """All jobs of this shard of a folder or glob IN, or of several IN. Raises before any
    work for a bad output folder, format or shard."""
    input, out = opts.input, Path(opts.output)
    if opts.out_format is not None:
        output_format(Path("x" + opts.out_format))
    if not 0 <= opts.shard_index < opts.num_shards:
        raise click.UsageError(f"--shard-index must be in 0..{opts.num_shards - 1}; got {opts.shard_index}")
    if out.exists() and not out.is_dir():
        raise OutputError(out, "is a file; a folder or glob input needs an output folder")
    if Path(input).is_dir() and out.exists() and same_file(input, out):
        raise OutputError(out, "is the input folder itself; choose another output folder")
    jobs, seen = [], {}
    for index, (f, rel) in enumerate(_sources(opts, out)):
        dst = out / rel.with_suffix(output_extension(rel, opts.out_format))
        job = Job(f, dst, rel.as_posix(), index)
        if dst in seen:
            job.collides_with = seen[dst]
        else:
            seen[dst] = f
        if opts.num_shards == 1 or zlib.crc32(job.rel.encode()) % opts.num_shards == opts.shard_index:
            jobs.append(job)
    check_output_folder(out)
    return jobs


@contextlib.contextmanager
def removed_if_left_empty(out):
    """Run the block; afterwards, when the block created the folder ``out`` (and any
    missing folders above it) and it holds no file, remove those folders again: a run
    that wrote nothing (every input failed, ``--fail-fast`` at the first, Ctrl-C) leaves
    no empty output folder behind, also when Ctrl-C ends the command with ``os._exit``
    (:class:`imgproc.io.interrupts.at_leave`). Only empty folders are removed
    (``os.rmdir``), so a file written meanwhile, by this run or another, keeps its folder."""
    out = Path(os.path.abspath(out))
    top = None  # the highest folder that does not exist yet
    p = out
    while not os.path.lexists(p) and p != p.parent:
        top, p = p, p.parent

    def remove_if_empty():
        if top is None or not out.is_dir():
            return
        for folder, _, _ in sorted(os.walk(out), key=lambda w: -len(w[0])):  # the deepest first
            try:
                os.rmdir(folder)
            except OSError:
                pass
        p = out.parent
        while top in (p, *p.parents):
            try:
                os.rmdir(p)
            except OSError:
                break
            p = p.parent

    try:
        with at_leave(remove_if_empty):  # also when Ctrl-C ends the command with os._exit
            yield
    finally:
        remove_if_empty()


def check_output_folder(out: Path):
    """Create ``out`` and check that a file can be created in it."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(out, f"cannot create the output folder ({e.strerror or e})") from None
    probe = out / f".imgproc-write-test-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as e:
        raise OutputError(out, f"folder not writable ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(probe)
