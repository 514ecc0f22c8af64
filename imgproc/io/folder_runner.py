"""Run a pipeline over a list of :class:`~imgproc.io.folder_plan.Job`: three stages in a row.

* :class:`DecodeStage` reads input files in a thread pool, a bounded window ahead;
* :class:`BatchStage` groups decoded images of one shape and dtype into batches and runs
  the pipeline on each (an alpha channel is split off first, moved by the geometric
  stages as a mask target and put back: :func:`alpha_plan`);
* :class:`WriteStage` saves results atomically in a thread pool.

:func:`run_jobs` drives them, so decoding, computing and encoding overlap, and turns each
failure into one report line (:mod:`imgproc.cli._report`); it returns the exit code. A
single file is a run of one job with ``fail_fast``: its exit code is that file's.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import dataclasses
import functools
import os
import re
import traceback

import numpy as np

from imgproc.core.validate import FloatRangeError
from imgproc.errors import ImgprocError, InvalidImageError, OutputError, OutputExistsError, WriteError
from imgproc.io import memory
from imgproc.io.codec import same_file, save_image, temp_files_for
from imgproc.io.folder_plan import Job
from imgproc.io.interrupts import INTERRUPTS
from imgproc.io.loader import COMMAND_LINE_OPTIONS, check_float_scale, read_image
from imgproc.io.native_stderr import LOCK as NATIVE_STDERR_LOCK
from imgproc.io.run_options import RunOptions, output_extension


@dataclasses.dataclass
class Decoded:
    """An input read from disk: colour (H, W, C), alpha (H, W, 1) or None, whether the
    file was 2-D, its metadata and the decoder's warnings."""

    job: Job
    colour: np.ndarray
    alpha: np.ndarray | None
    flat: bool
    info: object
    warnings: list


@dataclasses.dataclass
class Result:
    """One job's output image, or the reason it has none, and what was odd but not fatal
    (one line each)."""

    job: Job
    image: np.ndarray | None = None
    info: object = None
    error: BaseException | None = None
    warnings: list = dataclasses.field(default_factory=list)
    max_value: float | None = None  # the range a stage after the spec would be told (a float result's advice)


ALPHA_KEPT, ALPHA_MOVED, ALPHA_DROPPED = "kept", "moved", "dropped"


def alpha_plan(pipeline) -> tuple[str, str | None]:
    """How the alpha channel of an RGBA or grey + alpha image goes through ``pipeline``:
    ``(ALPHA_KEPT, None)`` when no stage moves pixels (filters, colour ops: the alpha is
    carried over unchanged), ``(ALPHA_MOVED, None)`` when some stage does (flips, turns,
    crops, resizes, warps: the alpha is passed as a mask target, :meth:`imgproc.Pipeline.__call__`
    ``targets=``, and moves with the image), or ``(ALPHA_DROPPED, op)`` for a stage that
    does not say how it moves pixels (``rand_augment``, ``auto_augment``, ...: the alpha
    cannot follow it, and is dropped with :func:`alpha_dropped`'s warning)."""
    from imgproc.core.registry import KEEPS_TARGETS, resolve_targets

    stages = getattr(pipeline, "stages", ())
    rules = [(stage.info.name, resolve_targets(stage)) for stage in stages]
    unknown = next((name for name, rule in rules if rule is None), None)
    if unknown is not None:
        return ALPHA_DROPPED, unknown
    if all(rule is KEEPS_TARGETS for _, rule in rules):
        return ALPHA_KEPT, None
    return ALPHA_MOVED, None


def alpha_dropped(op: str) -> str:
    """The warning of an image whose alpha channel cannot follow ``op`` (:func:`alpha_plan`)."""
    return f"alpha channel dropped (op {op!r} cannot move it with the image)"


def split_alpha(arr):
    """(colour as (H, W, C), alpha (H, W, 1) or None, was 2-D). Filters apply to colour;
    the alpha goes through the pipeline's geometric stages only (:func:`call_with_alpha`)."""
    if arr.ndim == 2:
        return arr[:, :, None], None, True
    if arr.shape[2] in (2, 4):
        return arr[:, :, :-1], arr[:, :, -1:], False
    return arr, None, False


def join_alpha(colour, alpha, flat):
    """``colour`` (H, W, C) with ``alpha`` (H, W, 1) appended, in ``colour``'s dtype: an
    integer alpha is scaled to [0, 1] when the result is float (``to_float``,
    ``normalize``), as the colour was; without alpha a 2-D input comes back 2-D."""
    if alpha is not None:
        alpha = np.asarray(alpha)
        if colour.dtype.kind == "f" and alpha.dtype.kind in "ui":
            alpha = alpha / np.float32(np.iinfo(alpha.dtype).max)
        return np.concatenate([colour, alpha.astype(colour.dtype)], axis=2)
    return colour[:, :, 0] if flat else colour


def call_with_alpha(pipeline, images, alphas, plan, **kwargs):
    """``pipeline(images, **kwargs)`` with each image's alpha moved as the image is:
    ``(result, moved)``, ``moved`` one (h, w, 1) alpha or None per image. ``images``: a
    batch (N, H, W, C) or a list (a pipeline that ``takes_lists``); ``alphas``: one (H, W,
    1) array or None per image; ``plan``: :func:`alpha_plan`'s first item. With
    :data:`ALPHA_MOVED` the alphas go in as ``targets={"masks": ...}`` (nearest-neighbour,
    zero where a stage brings in pixels from outside the image); otherwise they come back
    as given (the caller keeps or drops them)."""
    if plan != ALPHA_MOVED or all(a is None for a in alphas):
        return pipeline(images, **kwargs), list(alphas)
    masks = [np.zeros(np.shape(x)[:2], np.asarray(x).dtype) if a is None else a[:, :, 0]
             for x, a in zip(images, alphas)]
    if isinstance(images, list):
        out, moved = pipeline(images, targets=[{"masks": m} for m in masks], **kwargs)
        moved = [np.asarray(t["masks"]) for t in moved]
    else:
        out, moved = pipeline(images, targets={"masks": np.stack(masks)}, **kwargs)
        moved = list(np.asarray(moved["masks"]))
    return out, [None if a is None else m[:, :, None] for a, m in zip(alphas, moved)]


def memory_check(opts: RunOptions):
    """The loader's ``memory_check`` for ``opts.max_memory`` (None without a limit): it
    refuses (65) an image whose estimated decode and pipeline peak is over the budget,
    from its header, before decoding (:mod:`imgproc.io.memory`)."""
    if opts.max_memory is None:
        return None

    def check(path, width, height, channels, sample_bytes):
        need = memory.estimate(width, height, channels, sample_bytes, opts.work_bytes_per_value)
        if need > opts.max_memory:
            raise InvalidImageError(path, f"{width}x{height}x{channels} needs about {memory.format_size(need)} to decode "
                                          f"and process, over --max-memory {memory.format_size(opts.max_memory)}; "
                                          "raise --max-memory to allow it")

    return check


class DecodeStage:
    """Reads the jobs' inputs in ``workers`` threads, at most ``window`` ahead of the
    consumer (bounded memory). Iterating yields ``(job, Decoded or exception)`` in job
    order."""

    def __init__(self, jobs, opts: RunOptions, *, workers: int, window: int, stop_point=None):
        self.opts, self.window, self.stop_point = opts, window, stop_point
        self.jobs = iter(jobs)
        self.pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="imgproc-decode")
        self.pending: collections.deque = collections.deque()

    def _decode(self, job: Job) -> Decoded:
        notes = []
        arr, info = read_image(job.src, max_pixels=self.opts.max_pixels, allow_truncated=self.opts.allow_truncated,
                               options=COMMAND_LINE_OPTIONS,
                               warn=lambda path, message: notes.append(message), memory_check=memory_check(self.opts))
        check_float_scale(arr, job.src)
        return Decoded(job, *split_alpha(arr), info, notes)

    def _submit_next(self) -> bool:
        job = next(self.jobs, None)
        if job is None:
            return False
        self.pending.append((job, self.pool.submit(self._decode, job)))
        return True

    def __iter__(self):
        while len(self.pending) < self.window and self._submit_next():
            pass
        while self.pending:
            job, fut = self.pending.popleft()
            self._submit_next()
            while self.stop_point is not None and not fut.done():  # a long decode: still a safe point
                self.stop_point()
                cf.wait([fut], timeout=0.1)
            error = fut.exception()
            yield job, (error if error is not None else fut.result())

    def close(self):
        """Cancel the queued decodes; one in progress is not waited for (its image is not
        used; after Ctrl-C the command leaves without it)."""
        for _, fut in self.pending:
            fut.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)


class BatchStage:
    """Collects decoded images in groups and runs ``pipeline`` on a group when it has
    ``batch_size`` images, or, to bound memory, on the oldest group when more than
    ``2 * batch_size`` images wait. A group is one shape and dtype; for a pipeline that
    takes images of different sizes in one call (``pipeline.takes_lists``: its first stage
    sets a fixed size, :mod:`imgproc.pipeline.variable_size`), one dtype and channel count,
    any sizes, run as a list: a folder of many sizes then compiles a few programs, not one
    per size. ``key``: image ``i`` of a random pipeline gets ``fold_in(key, job.index)``.
    ``pad``: a partial group is padded with copies of its last image to the next power of
    two (at most ``batch_size``), so the few batch sizes a long run meets are compiled once
    each (``imgproc.ray``'s actors); the copies' outputs are dropped."""

    def __init__(self, pipeline, *, batch_size: int, key=None, pad: bool = False, max_work_bytes=None,
                 work_bytes_per_value: float = memory.FILTER_WORK_BYTES):
        self.pipeline, self.batch_size, self.key, self.pad = pipeline, batch_size, key, pad
        self.max_work_bytes, self.work_bytes_per_value = max_work_bytes, work_bytes_per_value
        self.lists = bool(getattr(pipeline, "takes_lists", False))
        self.alpha, self.alpha_op = alpha_plan(pipeline)
        self.groups: dict = collections.OrderedDict()
        self.waiting = 0
        self._cache_on = False

    def add(self, decoded: Decoded) -> list[Result]:
        image = decoded.colour
        group = (image.ndim, image.shape[2:], image.dtype.str) if self.lists else (image.shape, image.dtype.str)
        done = []
        if self.max_work_bytes is not None and group in self.groups:
            # within the memory budget: a batch of large images runs before it outgrows it
            work = sum(d.colour.size for d in self.groups[group]) + image.size
            if work * self.work_bytes_per_value > self.max_work_bytes:
                done = self._run(group)
        self.groups.setdefault(group, []).append(decoded)
        self.waiting += 1
        if len(self.groups[group]) >= self.batch_size:
            return done + self._run(group)
        if self.waiting > 2 * self.batch_size:
            return done + self._run(next(iter(self.groups)))
        return done

    def flush(self) -> list[Result]:
        results = []
        while self.groups:
            results += self._run(next(iter(self.groups)))
        return results

    def _run(self, group) -> list[Result]:
        items = self.groups.pop(group)
        self.waiting -= len(items)
        if not self._cache_on:
            from imgproc.core.program_cache import enable_compilation_cache

            enable_compilation_cache()
            self._cache_on = True
        n = len(items)
        if self.pad and n < self.batch_size:
            n = min(self.batch_size, 1 << (n - 1).bit_length())
        images = [d.colour for d in items]
        images += images[-1:] * (n - len(items))  # the padding copies
        stack = images if self.lists else _stacked(images)
        describe = getattr(self.pipeline, "describe", None)  # --verbose: one line per file
        if describe is not None:
            describe(stack[:len(items)], [str(d.job.src) for d in items])
        indices = np.asarray([d.job.index for d in items])
        indices = np.concatenate([indices, np.repeat(indices[-1:], n - len(items))])
        alphas = [d.alpha for d in items]
        alphas += alphas[-1:] * (n - len(items))
        try:
            kwargs = {} if self.key is None else {"key": self.key, "indices": indices}
            out, moved = call_with_alpha(self.pipeline, stack, alphas, self.alpha, **kwargs)
            out = np.asarray(out)
        except (ValueError, TypeError) as e:  # an image the pipeline cannot take, or a bad option
            return [Result(d.job, error=cannot_process(e, d.colour, d.alpha)) for d in items]
        max_value = spec_max_value(self.pipeline, items[0].colour.dtype)
        return [_result(d, out[i], moved[i], self.alpha_op, max_value) for i, d in enumerate(items)]


def spec_max_value(pipeline, dtype) -> float:
    """The value range a stage appended to ``pipeline`` would be told on ``dtype`` input:
    the dtype's, or the last stage's ``OpInfo.out_max_value`` (1.0 after ``normalize`` or
    ``to_float``; :func:`imgproc.core.registry.range_left_by`, the rule the pipeline's
    ``max_value_after`` follows): what a ``normalize`` ending the spec divides by
    (:func:`float_result_advice`)."""
    from imgproc.core.arrays import dtype_max
    from imgproc.core.registry import range_left_by

    fixed = range_left_by(getattr(pipeline, "stages", ()))
    return float(dtype_max(dtype) if fixed is None else fixed)


def _result(decoded: Decoded, image, alpha, dropped_by=None, max_value=None) -> Result:
    """The :class:`Result` of ``decoded``'s job: ``image`` with ``alpha`` (the input's,
    moved by the pipeline's geometric stages: :func:`call_with_alpha`), or without it and
    with a warning when ``dropped_by`` names an op the alpha cannot follow
    (:func:`alpha_plan`). ``max_value``: :func:`spec_max_value`."""
    if decoded.alpha is not None and dropped_by is not None:
        return Result(decoded.job, join_alpha(image, None, decoded.flat), decoded.info,
                      warnings=[alpha_dropped(dropped_by)], max_value=max_value)
    return Result(decoded.job, join_alpha(image, alpha, decoded.flat), decoded.info, max_value=max_value)


def cannot_process(error, colour, alpha) -> ValueError:
    """The ``ValueError`` of an image the pipeline refused (``error``): its reason, with
    the batch's shape and layout in the library's message (``got shape (1, 411, 333, 1)
    with layout 'NHWC'``) replaced by the image's own: ``got a 333x411 grey image``
    (width x height, as the other messages give sizes; an alpha channel is said to be set
    aside). The original is its cause."""
    h, w, c = colour.shape
    kind = {1: "grey", 3: "RGB"}.get(c, f"{c}-channel")
    if alpha is not None:
        kind = {1: "grey + alpha", 3: "RGBA"}.get(c, kind + " + alpha")
    image = f"{'an' if kind.startswith('RGB') else 'a'} {w}x{h} {kind} image"
    if alpha is not None:
        image += f" (its alpha is set aside: the ops see {c} channel{'s' * (c != 1)})"
    reason = re.sub(r"got shape \([0-9, ]*\) with layout '\w+'", f"got {image}", str(error))
    out = ValueError(f"cannot process ({reason})")
    out.__cause__ = error
    return out


def _stacked(images) -> np.ndarray:
    """``images`` (one shape and dtype) stacked into a batch, in 64-byte aligned host
    memory kept from batch to batch (:func:`imgproc.cpu.output_buffers.host_buffer`): the
    pipeline's program reads it in place, and its data always starts at the same
    alignment, so one compiled program (and one entry of the persistent cache) serves
    every batch of that shape, where a fresh array's alignment varies from run to run."""
    from imgproc.cpu import host_buffer

    stack = host_buffer((len(images),) + images[0].shape, images[0].dtype)
    for i, image in enumerate(images):
        stack[i] = image
    return stack


WRITTEN_BY_ANOTHER_RUN = "written by another run"


def save_spec_result(path, image, *, max_value=None, **options) -> None:
    """:func:`imgproc.save_image` of a command's result, its refusal of a float result
    clearly outside [0, 1] said for the command's spec rather than for Python code: the
    stage to end the spec with (:func:`float_result_advice`; ``max_value``:
    :func:`spec_max_value`)."""
    try:
        save_image(path, image, **options)
    except FloatRangeError as e:
        raise ValueError(float_result_advice(e.low, e.high, max_value)) from None


def float_result_advice(low: float, high: float, max_value=None) -> str:
    """Why a float result holding ``low..high`` is not written, and a ``normalize`` stage
    that maps exactly that range onto [0, 1] for a spec whose last stage is told
    ``max_value`` (normalize computes ``(x / max_value - mean) / std``), rounded outwards
    to two significant digits of the span. It fits whatever made the values (a Sobel's
    -1020..1020, a Gaussian gradient magnitude's 0..35 on a photo, where a Sobel's
    fixed recipe gave grey); ``max_value`` None: said in words.

    >>> print(float_result_advice(0.0023, 45.17, 255.0).split("such as ")[1].split(" (")[0])
    {"op": "normalize", "mean": 0, "std": 0.18}, which maps this file's 0.0023..45.2 onto [0, 1]
    """
    import math

    head = (f"the result holds {low:g}..{high:g} as floats, and a float result is written as values in [0, 1]: "
            "end the spec with a stage that maps it there")
    if max_value is None:
        return (head + ': {"op": "normalize", "mean": m, "std": s} computes (x / R - mean) / std, R the input\'s '
                "range (255 for 8-bit images, 65535 for 16-bit, 1 after to_float or normalize): m = low / R, "
                "s = (high - low) / R")
    lo, hi = low / max_value, high / max_value
    digits = max(2, 1 - math.floor(math.log10(hi - lo))) if hi > lo else 2
    scale = 10 ** digits
    mean = math.floor(lo * scale) / scale
    std = max(round(math.ceil(hi * scale) / scale - mean, digits), 1 / scale)
    return (head + f', such as {{"op": "normalize", "mean": {mean:g}, "std": {std:g}}}, which maps this file\'s '
            f"{low:.3g}..{high:.3g} onto [0, 1] (normalize computes (x / {max_value:g} - mean) / std; other files may "
            "need a wider range)")


def write_result(result: Result, opts: RunOptions) -> bool:
    """Save one result atomically to its job's output (the writer of every engine):
    stale temporary files of a killed run removed, folders created, metadata kept
    unless ``--strip``. True when written; False when, without ``--overwrite``, the
    output appeared while this run worked on it: another run wrote it (the jobs with an
    output at the start were skipped before any work), which is reported as skipped
    (:data:`WRITTEN_BY_ANOTHER_RUN`), not as an error. The file is never replaced then
    (:func:`imgproc.io.codec.write_atomically` publishes it in one step)."""
    job = result.job
    for stale in temp_files_for(job.dst):  # left by a run killed with SIGKILL
        try:
            stale.unlink()
        except OSError:
            pass
    try:
        job.dst.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(job.dst.parent, f"cannot create folder ({e.strerror or e})") from None
    exif = None if opts.strip else result.info.exif
    icc = None if opts.strip else result.info.icc_profile
    try:
        save_spec_result(job.dst, result.image, max_value=result.max_value, quality=opts.quality,
                         overwrite=opts.overwrite, source=job.src,
                         exif=exif, icc_profile=icc)
    except OutputExistsError:
        if opts.overwrite:
            raise
        return False
    return True


def failure(job: Job, error: BaseException) -> tuple:
    """``(path, reason, exit code)`` of a job's failure: the output's path for output and
    write errors, else the input's; an :class:`ImgprocError`'s reason and code, a
    ``ValueError`` as 65, anything else an internal error (70)."""
    path = job.dst if isinstance(error, (OutputError, WriteError)) else job.src
    if isinstance(error, ImgprocError):
        return path, error.reason, error.exit_code
    if isinstance(error, ValueError):
        return path, str(error), 65
    return path, f"internal error: {type(error).__name__}: {error}", 70


def internal_error(error: BaseException, report, opts: RunOptions) -> str:
    """Report ``error``, which no job caused (a fault of the run itself), through
    ``report`` (a JSON line with ``--log-format json``; the traceback with ``--debug``);
    the reason the run stopped, for its summary."""
    if opts.debug:
        with NATIVE_STDERR_LOCK:
            traceback.print_exception(error)
    reason = f"internal error: {type(error).__name__}: {error}"
    report.fatal(reason + ("" if opts.debug else " (run with --debug for the traceback)"), 70)
    return "stopped at an internal error"


class WriteStage:
    """Saves results atomically in ``workers`` threads. :meth:`finished` hands back
    ``(job, exception or None)`` for each write that completed."""

    def __init__(self, opts: RunOptions, *, workers: int):
        self.opts = opts
        self.pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="imgproc-encode")
        self.writes: dict = {}  # future -> job

    def _write(self, result: Result) -> bool:
        return write_result(result, self.opts)

    def submit(self, result: Result):
        self.writes[self.pool.submit(self._write, result)] = result.job

    def finished(self, *, wait: bool = False) -> list[tuple[Job, BaseException | None, bool]]:
        """``(job, exception or None, written)`` for each write that completed;
        ``written`` is False for an output another run wrote first."""
        if not self.writes:
            return []
        done, _ = cf.wait(self.writes, timeout=None if wait else 0,
                          return_when=cf.ALL_COMPLETED if wait else cf.FIRST_COMPLETED)
        return [_outcome(self.writes.pop(fut), fut) for fut in done]

    def completed(self) -> list[tuple[Job, BaseException | None, bool]]:
        """As :meth:`finished`, for the writes that completed by now, left for
        :meth:`finished` to hand back too: for the partial summary of a command that leaves
        while its main thread is busy (:func:`_last_words`)."""
        return [_outcome(job, fut) for fut, job in list(self.writes.items()) if fut.done() and not fut.cancelled()]

    def close(self) -> list[tuple[Job, BaseException | None, bool]]:
        """Let writes in flight finish (each is atomic: a complete file or nothing), cancel
        queued ones; those that completed meanwhile, as :meth:`finished` (for a partial
        summary)."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        return [_outcome(job, fut) for fut, job in self.writes.items() if fut.done() and not fut.cancelled()]


def _outcome(job, fut):
    error = fut.exception()
    return job, error, error is None and fut.result()


class _Stop(Exception):
    def __init__(self, code, reason):
        self.code, self.reason = code, reason


class _Failures:
    """Reports each failed job; raises :class:`_Stop` where the run must end (a write
    error, or any failure with ``fail_fast``). With ``raise_unexpected``, an error that is
    not an :class:`ImgprocError` is raised as it came (for the command's error handler)."""

    def __init__(self, report, opts: RunOptions, raise_unexpected: bool):
        self.report, self.opts, self.raise_unexpected = report, opts, raise_unexpected

    def __call__(self, job: Job, error: BaseException):
        path, reason, code = failure(job, error)
        if self.raise_unexpected and not isinstance(error, ImgprocError):
            cause = error.__cause__ or error
            if isinstance(cause, ValueError):  # a usage error (2) of this file: named, with its own shape
                raise ValueError(f"{path}: {reason}") from cause
            raise cause
        if self.opts.debug and not isinstance(error, (ImgprocError, ValueError)):
            with NATIVE_STDERR_LOCK:
                traceback.print_exception(error)
        self.report.error(path, reason, code)
        if isinstance(error, WriteError):
            raise _Stop(74, f"stopped at an I/O error while writing ({error.reason})")
        if self.opts.fail_fast:
            raise _Stop(code, "stopped at the first failure (--fail-fast)")


def collision_hint(job: Job, opts: RunOptions) -> str:
    """What to do about two inputs with one output: ``rename one``, and ``or drop
    --format`` only when the outputs without ``--format`` differ (``a.jpg``, ``a.png``
    with ``--format png``; not ``a.gif``, ``a.png``: a GIF input is written as PNG
    anyway, which is then said)."""
    if opts.out_format is not None and output_extension(job.src) != output_extension(job.collides_with):
        return f"rename one or drop --format (it gives both {opts.out_format})"
    converted = next((p for p in (job.src, job.collides_with) if output_extension(p) != p.suffix), None)
    if converted is None:
        return "rename one"
    also = "without --format too: " if opts.out_format is not None else ""
    return f"rename one ({also}a {converted.suffix} input is written as {output_extension(converted)})"


def jobs_to_do(jobs, opts: RunOptions, report) -> list[Job]:
    """The jobs left once collisions and outputs that are the input are refused and
    existing outputs are skipped (without ``overwrite``)."""
    todo = []
    for job in jobs:
        if job.collides_with is not None:
            report.error(job.src, f"its output {job.dst} is also the output of {job.collides_with}; "
                                  f"{collision_hint(job, opts)}", OutputError.exit_code)
        elif same_file(job.src, job.dst):
            report.error(job.dst, "is the input file itself; choose another output", OutputError.exit_code)
        elif job.dst.exists() and not opts.overwrite:
            report.ok(skipped=True, path=job.src)
        else:
            todo.append(job)
    return todo


class _Run:
    """One run: decoded images go to the batch stage, its results to the write stage,
    finished writes and every failure to the report."""

    def __init__(self, pipeline, jobs, opts: RunOptions, report, key, raise_unexpected, stop_point):
        self.stop_point = stop_point
        workers = opts.workers or min(8, (os.cpu_count() or 2) + 2)
        self.report, self.fail = report, _Failures(report, opts, raise_unexpected)
        self.decode = DecodeStage(jobs, opts, workers=workers, window=max(2 * workers, 2 * opts.batch_size),
                                  stop_point=stop_point)
        self.batch = BatchStage(pipeline, batch_size=opts.batch_size, key=key, max_work_bytes=opts.max_memory,
                                work_bytes_per_value=opts.work_bytes_per_value)
        self.write = WriteStage(opts, workers=workers)

    def run(self):
        for job, decoded in self.decode:
            self.stop_point()
            if isinstance(decoded, BaseException):
                self.fail(job, decoded)
            else:
                for message in decoded.warnings:
                    self.report.warning(job.src, message)
                self._send(self.batch.add(decoded))
            self.stop_point()
            self._collect()
        self._send(self.batch.flush())
        self.stop_point()
        self._collect(wait=True)
        self.stop_point()

    def _send(self, results: list[Result]):
        # a safe point between a batch's compute and its writes: a signal that came while the
        # batch computed (BM3D on a photo: seconds) ends the run before its outputs are written
        if results:
            self.stop_point()
        for result in results:
            if result.error is not None:
                self.fail(result.job, result.error)
            else:
                for message in result.warnings:
                    self.report.warning(result.job.src, message)
                self.write.submit(result)

    def _collect(self, wait=False):
        # the outputs written first: a write error stops the run (raises) in this loop, and
        # a write that completed beside it is on disk and must be in the summary
        for job, error, written in sorted(self.write.finished(wait=wait), key=lambda done: done[1] is not None):
            if error is not None:
                self.fail(job, error)
            elif written:
                self.report.ok()
            else:
                self.report.written_by_another_run(job.src, job.dst)

    def close(self):
        self.decode.close()
        for job, error, written in self.write.close():
            if error is None:  # a failure after the run stopped is not reported (its output is not there)
                if written:
                    self.report.ok()
                else:
                    self.report.written_by_another_run(job.src, job.dst)


def _last_words(report, write: WriteStage):
    """The partial summary, when the command leaves from its interrupt watcher (no safe
    point came in time: :data:`imgproc.io.interrupts.GRACE_S`); not waited for when
    another thread holds stderr (a decoder's capture). The writes that completed while
    the main thread was busy are on disk: they count as written (a write still in flight
    leaves only its temporary file)."""
    if NATIVE_STDERR_LOCK.acquire(timeout=0.3):
        try:
            for job, error, written in write.completed():
                if error is None and written:
                    report.ok()
                elif error is None:
                    report.written_by_another_run(job.src, job.dst)
            report.summary(interrupted=True)
        finally:
            NATIVE_STDERR_LOCK.release()
    else:
        os.write(2, b"error: interrupted\n")


def run_jobs(pipeline, jobs: list[Job], opts: RunOptions, report, *, key=None, raise_unexpected=False) -> int:
    """Run ``pipeline`` over ``jobs``, reporting to ``report``; the exit code: 0 all done,
    1 some failed, 74 disk full, 130 interrupted (Ctrl-C or SIGTERM), or the failing
    file's code with ``fail_fast``. ``raise_unexpected``: let errors other than
    :class:`ImgprocError` (a bad option the pipeline rejects, an internal error) out, as
    a single-file run does, instead of reporting them against the file."""
    run = _Run(pipeline, jobs_to_do(jobs, opts, report), opts, report, key, raise_unexpected, INTERRUPTS.stop_point)
    interrupted, stopped, code = False, None, None
    INTERRUPTS.last_words = functools.partial(_last_words, report, run.write)
    try:
        with INTERRUPTS:
            INTERRUPTS.stop_point()  # a signal that came while the pipeline was being built
            run.run()
    except KeyboardInterrupt:
        interrupted = True
    except _Stop as s:
        stopped, code = s.reason, s.code
    except Exception as e:  # noqa: BLE001 - an internal error: reported like the rest, then the summary
        if raise_unexpected:
            raise
        stopped, code = internal_error(e, report, opts), 70
    finally:
        INTERRUPTS.last_words = None
        run.close()
    report.summary(interrupted=interrupted, stopped=stopped)
    if interrupted:
        return 130
    if code is not None:
        return code
    return 1 if report.failed else 0
