"""Folder and glob runs of the ``imgproc`` command.

``run_folder`` maps every input image to an output under OUT that mirrors the input tree,
decodes and encodes in a thread pool while the compiled pipeline runs on the device
(images of the same shape are stacked into one batch), reports progress, skips what
fails (one ``error: PATH: reason`` line each), and ends with a summary. See
``docs/cli.md`` for the behaviour and the exit codes.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import dataclasses
import glob
import json
import os
import signal
import sys
import threading
import time
import zlib
from pathlib import Path

import click
import numpy as np

from imgproc._io import OUTPUT_FORMATS, output_format, same_file, save_image, temp_files_for
from imgproc._loader import DEFAULT_MAX_PIXELS, read_image
from imgproc._native_stderr import LOCK as NATIVE_STDERR_LOCK
from imgproc.errors import ImgprocError, InputError, OutputError, WriteError

# Files picked from a folder (the format itself is then read from the bytes).
IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".jpe", ".png", ".tif", ".tiff", ".webp", ".bmp", ".gif"}
_MAGIC = set("*?[")


@dataclasses.dataclass
class RunOptions:
    quality: int = 95
    overwrite: bool = False
    recursive: bool = False
    out_format: str | None = None  # ".png" etc.; None keeps the input's extension
    max_pixels: int = DEFAULT_MAX_PIXELS
    allow_truncated: bool = False
    strip: bool = False
    fail_fast: bool = False
    quiet: bool = False
    log_format: str = "text"
    batch_size: int = 8
    workers: int | None = None
    shard_index: int = 0
    num_shards: int = 1
    log_interval: float = 10.0


@dataclasses.dataclass
class Job:
    src: Path
    dst: Path
    rel: str
    index: int  # position in the sorted list of all inputs (before sharding): random key index
    collides_with: Path | None = None  # an earlier input with the same output path


def is_folder_input(input) -> bool:
    p = Path(input)
    return p.is_dir() or (not p.exists() and any(c in str(input) for c in _MAGIC))


def _glob_base(pattern: str) -> Path:
    parts = Path(pattern).parts
    base = []
    for part in parts:
        if any(c in part for c in _MAGIC):
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


def plan(input, output, opts: RunOptions) -> list[Job]:
    """All jobs of this shard. Raises before any work for a bad output folder or format."""
    out = Path(output)
    if opts.out_format is not None:
        output_format(Path("x" + opts.out_format))
    if not 0 <= opts.shard_index < opts.num_shards:
        raise click.UsageError(f"--shard-index must be in 0..{opts.num_shards - 1}; got {opts.shard_index}")
    if out.exists() and not out.is_dir():
        raise OutputError(out, "is a file; a folder or glob input needs an output folder")
    if Path(input).is_dir() and out.exists() and same_file(input, out):
        raise OutputError(out, "is the input folder itself; choose another output folder")
    if not Path(input).is_dir() and not any(c in str(input) for c in _MAGIC):
        raise InputError(input, "no such file or folder")
    base, files = find_inputs(input, recursive=opts.recursive, exclude=out)
    if not files:
        raise InputError(input, "no image files found" + ("" if opts.recursive or not Path(input).is_dir() else " (use --recursive for subfolders)"))
    jobs, seen = [], {}
    for index, f in enumerate(files):
        rel = f.relative_to(base)
        ext = opts.out_format or (rel.suffix.lower() if rel.suffix.lower() in OUTPUT_FORMATS else ".png")
        dst = out / rel.with_suffix(ext)
        job = Job(f, dst, rel.as_posix(), index)
        if dst in seen:
            job.collides_with = seen[dst]
        else:
            seen[dst] = f
        if opts.num_shards == 1 or zlib.crc32(job.rel.encode()) % opts.num_shards == opts.shard_index:
            jobs.append(job)
    _check_output_folder(out)
    return jobs


def _check_output_folder(out: Path):
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(out, f"cannot create the output folder ({e.strerror or e})") from None
    try:
        fd = os.open(out / f".imgproc-write-test-{os.getpid()}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as e:
        raise OutputError(out, f"folder not writable ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(out / f".imgproc-write-test-{os.getpid()}")


class Reporter:
    """Errors, warnings, progress and the summary, as text or JSON lines on stderr."""

    def __init__(self, total: int, opts: RunOptions):
        self.total, self.opts = total, opts
        self.json = opts.log_format == "json"
        self.done = self.failed = self.written = self.skipped = 0
        self.failures: list[tuple[str, str, int]] = []
        self.start = time.monotonic()
        self.last_log = self.start
        self.lock = threading.Lock()
        self.bar = None
        if not opts.quiet and not self.json and _stderr_is_tty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("[bold]imgproc"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                TextColumn("{task.fields[fails]}"),
                                console=Console(stderr=True, highlight=False), transient=False,
                                auto_refresh=False)  # redrawn in _tick, under the capture lock
            self.task = self.bar.add_task("run", total=total, rate="", fails="")
            self.bar.start()

    # Both hold the native-stderr lock while writing: a decoder thread may have fd 2
    # pointed at a capture file (imgproc._native_stderr), and our lines must not land there.
    def _line(self, text: str):
        with NATIVE_STDERR_LOCK:
            if self.bar is not None:
                self.bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
            else:
                click.echo(text, err=True)

    def _event(self, **fields):
        with NATIVE_STDERR_LOCK:
            click.echo(json.dumps(fields), err=True)

    def error(self, path, reason, code):
        with self.lock:
            self.failed += 1
            self.done += 1
            self.failures.append((str(path), reason, code))
            if self.json:
                self._event(event="error", path=str(path), reason=reason, exit_code=code)
            else:
                self._line(f"error: {path}: {reason}")
            self._tick()

    def warning(self, path, message):
        if self.opts.quiet:
            return
        with self.lock:
            if self.json:
                self._event(event="warning", path=str(path), message=message)
            else:
                self._line(f"warning: {path}: {message}")

    def ok(self, skipped=False):
        with self.lock:
            self.done += 1
            if skipped:
                self.skipped += 1
            else:
                self.written += 1
            self._tick()

    def rate(self) -> float:
        elapsed = time.monotonic() - self.start
        processed = self.done - self.skipped
        return processed / elapsed if elapsed > 0 else 0.0

    def _tick(self):
        now = time.monotonic()
        rate = self.rate()
        left = self.total - self.done
        eta = left / rate if rate > 0 else float("nan")
        if self.bar is not None:
            with NATIVE_STDERR_LOCK:
                self.bar.update(self.task, completed=self.done, rate=f"{rate:.1f} img/s",
                                fails=f"{self.failed} failed" if self.failed else "")
                self.bar.refresh()
            return
        if self.opts.quiet or now - self.last_log < self.opts.log_interval:
            return
        self.last_log = now
        if self.json:
            self._event(event="progress", done=self.done, total=self.total, failed=self.failed,
                        images_per_s=round(rate, 2), eta_s=None if eta != eta else round(eta, 1))
        else:
            eta_text = "?" if eta != eta else f"{eta:.0f}s"
            self._line(f"progress: {self.done}/{self.total} done, {rate:.1f} images/s, ETA {eta_text}, {self.failed} failed")

    def summary(self, *, interrupted=False, stopped=None):
        if self.bar is not None:
            self.bar.stop()
        elapsed = time.monotonic() - self.start
        if self.json:
            self._event(event="summary", total=self.total, written=self.written, skipped=self.skipped,
                        failed=self.failed, not_done=self.total - self.done, seconds=round(elapsed, 3),
                        images_per_s=round(self.rate(), 2), interrupted=interrupted, stopped=stopped,
                        failures=[{"path": p, "reason": r, "exit_code": c} for p, r, c in self.failures])
            return
        if self.opts.quiet and not (self.failed or interrupted or stopped):
            return
        head = "interrupted" if interrupted else ("stopped" if stopped else "summary")
        text = (f"{head}: {self.written} written, {self.skipped} skipped (output exists), {self.failed} failed"
                + (f", {self.total - self.done} not done" if self.done < self.total else "")
                + f", of {self.total} in {elapsed:.1f}s ({self.rate():.1f} images/s)")
        if stopped:
            text += f"; {stopped}"
        self._line(text)
        if self.failures:
            self._line(f"failed ({len(self.failures)}):")
            for p, r, c in self.failures:
                self._line(f"  {p}: {r}")


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Stop(Exception):
    def __init__(self, code, reason):
        self.code, self.reason = code, reason


def _split_alpha(arr):
    """(colour as (H, W, C), alpha or None, was 2-D). Filters apply to colour; alpha is
    carried over unchanged."""
    if arr.ndim == 2:
        return arr[:, :, None], None, True
    if arr.shape[2] in (2, 4):
        return arr[:, :, :-1], arr[:, :, -1:], False
    return arr, None, False


def _join_alpha(colour, alpha, flat):
    if alpha is not None:
        return np.concatenate([colour, alpha.astype(colour.dtype)], axis=2)
    return colour[:, :, 0] if flat else colour


def run_folder(pipeline, input, output, opts: RunOptions, *, key=None) -> int:
    """Run ``pipeline`` over every image of ``input`` (folder or glob) into ``output``;
    returns the exit code (0 all done, 1 some failed, 74 disk full, 130 interrupted, or
    the failing file's code with ``fail_fast``)."""
    jobs = plan(input, output, opts)
    rep = Reporter(len(jobs), opts)
    todo = []
    for job in jobs:
        if job.collides_with is not None:
            rep.error(job.src, f"its output {job.dst} is also the output of {job.collides_with}; rename one or use --format", OutputError.exit_code)
        elif same_file(job.src, job.dst):
            rep.error(job.dst, "is the input file itself; choose another output", OutputError.exit_code)
        elif job.dst.exists() and not opts.overwrite:
            rep.ok(skipped=True)
        else:
            todo.append(job)
    workers = opts.workers or min(8, (os.cpu_count() or 2) + 2)
    interrupted, stopped, code = False, None, None
    previous = _install_sigterm()
    try:
        _execute(pipeline, todo, opts, rep, workers, key)
    except KeyboardInterrupt:
        interrupted = True
    except _Stop as s:
        stopped, code = s.reason, s.code
    finally:
        _restore_sigterm(previous)
    rep.summary(interrupted=interrupted, stopped=stopped)
    if interrupted:
        return 130
    if code is not None:
        return code
    return 1 if rep.failed else 0


def _execute(pipeline, todo, opts, rep, workers, key):
    decode_pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="imgproc-decode")
    write_pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="imgproc-encode")
    window = max(2 * workers, 2 * opts.batch_size)
    pending_reads = collections.deque()
    writes: set = set()
    groups: dict = collections.OrderedDict()
    n_pending = 0
    it = iter(todo)

    def decode(job):
        notes = []
        arr, info = read_image(job.src, max_pixels=opts.max_pixels, allow_truncated=opts.allow_truncated,
                               warn=lambda p, m: notes.append(m))
        return arr, info, notes

    def write(job, arr, info):
        for stale in temp_files_for(job.dst):  # left by a run killed with SIGKILL
            try:
                stale.unlink()
            except OSError:
                pass
        try:
            job.dst.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(job.dst.parent, f"cannot create folder ({e.strerror or e})") from None
        exif = None if opts.strip else info.exif
        icc = None if opts.strip else info.icc_profile
        save_image(job.dst, arr, quality=opts.quality, overwrite=opts.overwrite, source=job.src, exif=exif, icc_profile=icc)

    def fail(path, e):
        if isinstance(e, ImgprocError):
            rep.error(path, e.reason, e.exit_code)
            code = e.exit_code
        elif isinstance(e, ValueError):
            rep.error(path, str(e), 65)
            code = 65
        else:
            rep.error(path, f"internal error: {type(e).__name__}: {e}", 70)
            code = 70
        if isinstance(e, WriteError):
            raise _Stop(74, f"stopped at an I/O error while writing ({e.reason})")
        if opts.fail_fast:
            raise _Stop(code, "stopped at the first failure (--fail-fast)")

    def reap(block=False):
        nonlocal writes
        if not writes:
            return
        done, _ = cf.wait(writes, timeout=None if block else 0, return_when=cf.FIRST_COMPLETED if not block else cf.ALL_COMPLETED)
        for fut in done:
            writes.discard(fut)
            job = fut.job
            e = fut.exception()
            if e is None:
                rep.ok()
            else:
                fail(job.dst if isinstance(e, (OutputError, WriteError)) else job.src, e)

    def run_group(gkey):
        nonlocal n_pending
        items = groups.pop(gkey)
        n_pending -= len(items)
        stack = np.stack([c for _, c, _, _, _ in items])
        try:
            if key is not None:
                out = pipeline(stack, key=key, indices=np.asarray([j.index for j, *_ in items]))
            else:
                out = pipeline(stack)
            out = np.asarray(out)
        except (ValueError, TypeError) as e:
            for job, *_ in items:
                fail(job.src, ValueError(f"cannot process ({e})"))
            return
        for i, (job, _, alpha, flat, info) in enumerate(items):
            fut = write_pool.submit(write, job, _join_alpha(out[i], alpha, flat), info)
            fut.job = job
            writes.add(fut)

    try:
        for job in it:
            fut = decode_pool.submit(decode, job)
            fut.job = job
            pending_reads.append(fut)
            if len(pending_reads) >= window:
                break
        while pending_reads:
            fut = pending_reads.popleft()
            job = fut.job
            nxt = next(it, None)
            if nxt is not None:
                f2 = decode_pool.submit(decode, nxt)
                f2.job = nxt
                pending_reads.append(f2)
            e = fut.exception()
            if e is not None:
                fail(job.src, e)
            else:
                arr, info, notes = fut.result()
                for m in notes:
                    rep.warning(job.src, m)
                colour, alpha, flat = _split_alpha(arr)
                gkey = (colour.shape, colour.dtype.str)
                groups.setdefault(gkey, []).append((job, colour, alpha, flat, info))
                n_pending += 1
                if len(groups[gkey]) >= opts.batch_size:
                    run_group(gkey)
                elif n_pending > 2 * opts.batch_size:
                    run_group(next(iter(groups)))  # the oldest group: bounded memory
            reap()
        for gkey in list(groups):
            run_group(gkey)
        reap(block=True)
    finally:
        for f in pending_reads:
            f.cancel()
        decode_pool.shutdown(wait=True, cancel_futures=True)
        # Writes in flight finish (each is atomic: a complete file or nothing); queued
        # ones are cancelled. save_image removes its temporary file on any failure.
        write_pool.shutdown(wait=True, cancel_futures=True)
        for fut in writes:  # count what finished while stopping (partial summary)
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                rep.ok()


def _install_sigterm():
    """SIGTERM behaves like Ctrl-C (clean stop, partial summary, exit 130)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        return None


def _restore_sigterm(previous):
    if previous is not None:
        try:
            signal.signal(signal.SIGTERM, previous)
        except (ValueError, OSError):
            pass
