"""Folders and buckets beyond one process, on Ray Data (extra ``[ray]``: ``pip install
"imgproc-jax[ray]"``).

:func:`process` runs a pipeline over a folder (or glob, or list of files) into an output
folder on a Ray cluster, with the command line's rules: the same outputs (``imgproc
denoise IN OUT --engine ray`` writes the same bytes as ``imgproc denoise IN OUT``), the
same output paths, the same reasons for bad files, existing outputs skipped unless
``overwrite``. The dataset has two stages:

1. **read** (Ray tasks, :data:`TASK_CPUS` CPU each): each file's bytes
   (:func:`imgproc.io.loader.read_file_bytes`: the size limit applies before reading);
2. **compute** (a pool of ``num_actors`` callable-class actors): each builds the pipeline
   from its spec once; for a block of files it decodes the bytes with the public codec
   (:func:`imgproc.decode_image`, the loader's defences and metadata rules) in a thread
   pool, groups the images by shape, pads a partial group to the next power of two (at
   most ``batch_size``: a few compiled programs, none per batch or image size), runs
   it, and encodes and writes the results atomically with the command line's writer
   (:func:`imgproc.io.folder_runner.write_result`) in the same thread pool. Image ``i`` of a
   random pipeline gets ``fold_in(key, index)`` with the index of its path in the sorted
   inputs (the command line's ``Job.index``), so outputs depend neither on the number of
   actors nor on how Ray batches rows.

The dataset's blocks are whole batches (:func:`read_blocks`), so no batch but a block's
last is padded; and each actor keeps freed image-sized buffers for reuse in its own worker
process (:func:`imgproc.reuse_host_memory`), as the command line does for its process.
Only file bytes and one status row per file travel through Ray's object store: decoded
images stay in the actor that decodes them (moving decoded arrays between a decode task,
an actor and a write task made a run much slower than the command line; why:
benchmarks/NOTES.md, "Ray Data and shards on one machine").

A file that fails at any stage becomes a row of the result table (``path``, ``status``
``"failed"``, ``reason``, ``exit_code``) instead of failing the dataset.

Resources: actors take ``cpus_per_actor`` CPUs each and read tasks :data:`TASK_CPUS`;
``num_actors * cpus_per_actor`` must leave at least :data:`TASK_CPUS` of the cluster's
CPUs free, so read tasks can always be
scheduled (two one-CPU actors on a two-core machine would starve the reads and hang
silently; that is refused, naming the limit). Ray Data's ``wait_for_min_actors_s`` is set
(:data:`ACTOR_START_TIMEOUT_S`), so actors that cannot be placed raise instead of
waiting forever.

Example (starts a local Ray cluster)::

    >>> import imgproc.ray                                        # doctest: +SKIP
    >>> table = imgproc.ray.process("photos", "out", [{"op": "gaussian_blur", "sigma": 1.0}])  # doctest: +SKIP
    >>> table[table.status == "failed"][["path", "reason"]]       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import warnings
from pathlib import Path

import numpy as np

from imgproc.errors import UnavailableError
from imgproc.io.loader import DEFAULT_MAX_PIXELS
from imgproc.io.native_stderr import captured

__all__ = ["ACTOR_START_TIMEOUT_S", "TASK_CPUS", "connect", "initialized", "process", "run_jobs"]

TASK_CPUS = 0.5  # CPUs a read or write task asks for
ACTOR_START_TIMEOUT_S = 300  # Ray Data raises when the actor pool cannot start within this
CONNECT_TIMEOUT_S = 5.0
READ_BLOCK_FILES = 32  # files a read task reads (each task has a scheduling cost in Ray)
INSTALL_HINT = 'not installed; pip install "imgproc-jax[ray]"'


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise UnavailableError("ray", INSTALL_HINT) from None
    return ray


def _check_reachable(address: str):
    """Fail fast (one line, exit 69) when ``host:port`` does not answer a TCP connection:
    ``ray.init`` would otherwise retry for a minute or more."""
    target = address.split("://", 1)[-1].rstrip("/")
    host, _, port = target.rpartition(":")
    if not host:
        host, port = target, "10001" if address.startswith("ray://") else "6379"
    try:
        port = int(port)
    except ValueError:
        raise UnavailableError(address, "not a Ray cluster address (HOST:PORT, ray://HOST:PORT or auto)") from None
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        why = e.strerror or str(e) or type(e).__name__
        raise UnavailableError(address, f"cannot reach the Ray cluster ({why})") from None


def initialized() -> bool:
    """Whether this process is connected to a Ray cluster (False without ``ray``)."""
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized()


def connect(address: str | None = None, **init_kwargs):
    """The ``ray`` module, connected: to ``address`` (``HOST:PORT``, ``ray://HOST:PORT`` or
    ``"auto"``), or, with None, to the cluster of ``RAY_ADDRESS`` or a new local one. An
    already initialised Ray is used as it is.

    Raises:
        UnavailableError: ``ray`` is not installed, or the cluster cannot be reached
            (exit code 69), within :data:`CONNECT_TIMEOUT_S` seconds for an address that
            does not answer.
    """
    ray = _ray()
    if ray.is_initialized():
        return ray
    if address not in (None, "auto", "local"):
        _check_reachable(address)
    kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": True, "logging_level": "ERROR",
              **init_kwargs}
    # Ray retries a cluster that does not answer for a long while (once a second); an address
    # that accepts TCP but is not a Ray GCS (a proxy) would pass the check above, so the
    # number of tries is bounded too (Ray's own knob; one try a second), unless set.
    remote = address not in (None, "local")
    bounded = remote and "RAY_gcs_server_port_wait_time_s" not in os.environ
    if bounded:
        os.environ["RAY_gcs_server_port_wait_time_s"] = str(int(CONNECT_TIMEOUT_S))
    try:
        # the core library prints each retry on fd 2: captured, so a failure is one line
        with captured() if remote else contextlib.nullcontext():
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, TimeoutError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnavailableError(address or "ray", f"cannot connect to the Ray cluster ({first[:200]})") from None
    finally:
        if bounded:
            del os.environ["RAY_gcs_server_port_wait_time_s"]
    return ray


def _pipeline(spec, bucket):
    """A :class:`imgproc.Pipeline` from a pipeline, a spec list or its JSON text (parsed
    here, on the driver, before any Ray work: a bad spec is a ValueError)."""
    from imgproc.pipeline.pipeline import Pipeline

    if isinstance(spec, Pipeline):
        return Pipeline.from_spec(spec.to_spec(), layout=spec.layout, bucket=spec.bucket)
    return Pipeline.from_spec(spec, bucket=bucket)


def _key_data(pipe, key):
    if not pipe.is_random:
        return None
    if key is None:
        raise ValueError("this pipeline has random stages: pass key=jax.random.key(seed) (or an int seed)")
    import jax

    from imgproc.core.validate import check_key

    key = check_key(key)
    return np.asarray(jax.random.key_data(key)), str(jax.random.key_impl(key))


def _resources(ray, num_actors, cpus_per_actor, gpus_per_actor):
    """``(num_actors, cpus_per_actor)`` checked against the cluster: the actors leave
    :data:`TASK_CPUS` free for the read tasks."""
    total = float(ray.cluster_resources().get("CPU", 1))
    if cpus_per_actor is None:
        # at least two actors: while one decodes and writes its block, the other computes
        # (on 2 CPUs two actors of 0.75 CPU; benchmarks/NOTES.md, "Ray Data and shards on
        # one machine")
        free = max(total - TASK_CPUS, 0.5)
        cpus_per_actor = min(1.0, free / (num_actors or max(2, int(free))))
    if not cpus_per_actor > 0:
        raise ValueError(f"cpus_per_actor must be > 0; got {cpus_per_actor!r}")
    most = int((total - TASK_CPUS) // cpus_per_actor)
    if num_actors is None:
        num_actors = max(1, most)
    if isinstance(num_actors, bool) or not isinstance(num_actors, int) or num_actors < 1:
        raise ValueError(f"num_actors must be a positive integer; got {num_actors!r}")
    if num_actors > most:
        raise ValueError(
            f"num_actors={num_actors} x cpus_per_actor={cpus_per_actor} leaves less than {TASK_CPUS} of the cluster's "
            f"{total:g} CPUs for the read and write tasks (the run would hang); use num_actors <= {max(most, 0)} "
            f"or fewer cpus_per_actor")
    if gpus_per_actor < 0:
        raise ValueError(f"gpus_per_actor must be >= 0; got {gpus_per_actor!r}")
    return num_actors, cpus_per_actor


# --------------------------------------------------------------------------- stages (run in Ray workers)


def _row(src, dst, index, **fields):
    row = {"src": src, "dst": dst, "index": index, "status": "ok", "reason": "", "code": 0, "warnings": "",
           "failed_path": "", "data": b""}
    row.update(fields)
    return row


def _job(row):
    from imgproc.io.folder_plan import Job

    return Job(Path(row["src"]), Path(row["dst"]), "", int(row["index"]))


def _failed(row, error):
    from imgproc.io.folder_runner import failure

    path, reason, code = failure(_job(row), error)
    return {"status": "failed", "reason": reason, "code": code, "src": row["src"], "dst": row["dst"],
            "failed_path": str(path)}


def _rows(batch):
    n = len(batch["src"])
    return [{k: batch[k][i] for k in batch} for i in range(n)]


def _columns(rows):
    return {k: np.array([r[k] for r in rows], dtype=object if k not in ("index", "code") else np.int64)
            for k in rows[0]} if rows else {}


def _read(batch, *, max_pixels):
    """Read task: each file's bytes (a file too large for ``max_pixels`` is refused unread)."""
    from imgproc.io.loader import read_file_bytes

    out = []
    for r in _rows(batch):
        row = _row(r["src"], r["dst"], int(r["index"]))
        try:
            row["data"] = read_file_bytes(r["src"], max_pixels=max_pixels)
        except Exception as e:  # noqa: BLE001 - every failure becomes a row, as the CLI reports it
            row.update(_failed(row, e))
        out.append(row)
    return _columns(out)


class _Compute:
    """Compute actor: the pipeline built from its spec once; each Ray batch of file bytes
    decoded, grouped by shape and run through the command line's batch stage with padding,
    then written (see the module doc). Returns one status row per file."""

    def __init__(self, spec, bucket, layout, key_data, opts, workers):
        import concurrent.futures as cf

        import jax

        from imgproc.pipeline.pipeline import Pipeline
        from imgproc.io.folder_runner import BatchStage
        from imgproc.cpu import reuse_host_memory

        # this worker process exists for this actor alone: it keeps freed image-sized
        # buffers for reuse, as the command line's process does (imgproc.cpu.host_memory;
        # benchmarks/NOTES.md, "Ray Data and shards on one machine")
        reuse_host_memory()

        self.pipe = Pipeline.from_spec(spec, layout=layout, bucket=bucket)
        key = None
        if key_data is not None:
            data, impl = key_data
            key = jax.random.wrap_key_data(np.asarray(data), impl=impl)
        self.opts = opts
        self.stage = BatchStage(self.pipe, batch_size=opts.batch_size, key=key, pad=True, max_work_bytes=opts.max_memory,
                                work_bytes_per_value=opts.work_bytes_per_value)
        self.pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="imgproc-ray")

    def _decode(self, i, row):
        from imgproc.io.folder_runner import Decoded, memory_check, split_alpha
        from imgproc.io.loader import COMMAND_LINE_OPTIONS, check_float_scale, decode_bytes

        notes = []
        arr, info = decode_bytes(bytes(row["data"]), row["src"], max_pixels=self.opts.max_pixels,
                                 allow_truncated=self.opts.allow_truncated, memory_check=memory_check(self.opts),
                                 warn=lambda path, message: notes.append(message), options=COMMAND_LINE_OPTIONS)
        check_float_scale(arr, row["src"])  # as the plain run's decode stage
        job = _job(row)
        job.rel = str(i)  # where the row is in this batch
        return Decoded(job, *split_alpha(arr), info, notes)

    def __call__(self, batch):
        from imgproc.io.folder_runner import write_result

        rows = _rows(batch)
        out = [_status(r) for r in rows]
        decoding = {i: self.pool.submit(self._decode, i, r) for i, r in enumerate(rows) if r["status"] == "ok"}
        results = []
        for i, fut in decoding.items():
            try:
                decoded = fut.result()
            except Exception as e:  # noqa: BLE001 - reported as the CLI reports it
                out[i].update(_failed(rows[i], e))
                continue
            out[i]["warnings"] = "\n".join(decoded.warnings)
            results += self.stage.add(decoded)
        results += self.stage.flush()
        writing = {}
        for res in results:
            i = int(res.job.rel)
            if res.error is not None:
                out[i].update(_failed(rows[i], res.error))
            else:
                out[i]["warnings"] = "\n".join(filter(None, [out[i]["warnings"], *res.warnings]))
                writing[i] = self.pool.submit(write_result, res, self.opts)
        for i, fut in writing.items():
            try:
                out[i]["status"] = "written" if fut.result() else "written by another run"
            except Exception as e:  # noqa: BLE001 - reported as the CLI reports it
                out[i].update(_failed(rows[i], e))
        return _columns(out)


def _status(row):
    """The result row of a file (``failed_path``: where an error is reported)."""
    return {"src": row["src"], "dst": row["dst"], "status": row["status"], "reason": row["reason"],
            "code": int(row["code"]), "warnings": row["warnings"], "failed_path": row["failed_path"] or row["src"]}


# --------------------------------------------------------------------------- driver


def read_blocks(rows: list, batch_size: int, num_actors: int) -> list[list]:
    """``rows`` cut into the dataset's blocks (one read task each): whole batches of
    ``batch_size`` rows, except the last block. Ray Data cuts an actor's batches inside
    each block, so a block of 29 rows would end in a partial batch of 5, padded to 8 and
    computed in full (why: benchmarks/NOTES.md, "Ray Data and shards on one machine"). A
    block holds about :data:`READ_BLOCK_FILES` rows (fewer, larger read tasks), but there
    are at least two blocks per actor where the rows make that many batches, so every
    actor gets work.

    >>> [len(b) for b in read_blocks(list(range(200)), 8, 2)]
    [32, 32, 32, 32, 32, 32, 8]
    >>> [len(b) for b in read_blocks(list(range(20)), 8, 2)]
    [8, 8, 4]
    """
    batches = -(-len(rows) // batch_size)
    per_block = max(1, min(-(-READ_BLOCK_FILES // batch_size), batches // (2 * num_actors)))
    step = per_block * batch_size
    return [rows[i:i + step] for i in range(0, len(rows), step)]


def run_jobs(pipeline, jobs, opts, report, *, key=None, address=None, num_actors=None, cpus_per_actor=None,
             gpus_per_actor=0.0, stop_point=None):
    """Run ``pipeline`` over ``jobs`` (:class:`imgproc.io.folder_plan.Job`, already checked:
    nothing to skip) on Ray, reporting each file to ``report`` (``error``, ``warning``,
    ``ok``) as its result comes back. ``opts``: the command line's
    :class:`~imgproc.cli._options.RunOptions` (batch size, quality, overwrite, strip,
    pixel limit). ``stop_point()`` is called between result batches (it may raise
    ``KeyboardInterrupt`` to end the run)."""
    pipe = _pipeline(pipeline, bucket=getattr(pipeline, "bucket", "auto"))
    key_data = _key_data(pipe, key)
    if not jobs:
        return
    ray = connect(address)
    num_actors, cpus_per_actor = _resources(ray, num_actors, cpus_per_actor, gpus_per_actor)
    import pyarrow as pa
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # its INFO lines are not the report
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the report says how the run goes
    ctx.wait_for_min_actors_s = ACTOR_START_TIMEOUT_S  # actors that cannot be placed: an error, not a hang
    ctx.execution_options.preserve_order = False
    rows = [{"src": str(j.src), "dst": str(j.dst), "index": int(j.index)} for j in jobs]
    ds = ray.data.from_blocks([pa.Table.from_pylist(block) for block in read_blocks(rows, opts.batch_size, num_actors)])
    ds = ds.map_batches(_read, fn_kwargs={"max_pixels": opts.max_pixels},
                        batch_size=None, num_cpus=TASK_CPUS, batch_format="numpy")
    with warnings.catch_warnings():
        # max_restarts=0: a crashed actor fails the run instead of being restarted (else
        # the core library prints a warning on fd 2 for every actor); Ray 2.5x marks
        # passing remote options this way as deprecated, with no other way to set it
        warnings.simplefilter("ignore", DeprecationWarning)
        workers = opts.workers or min(8, (os.cpu_count() or 2) + 2)  # decode/encode threads, as the CLI's
        ds = ds.map_batches(_Compute, fn_constructor_args=(pipe.to_spec(), pipe.bucket, pipe.layout, key_data, opts,
                                                           workers),
                            batch_size=opts.batch_size, compute=ray.data.ActorPoolStrategy(size=num_actors),
                            num_cpus=cpus_per_actor, num_gpus=gpus_per_actor or None, batch_format="numpy",
                            max_restarts=0)
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        if stop_point is not None:
            stop_point()
        for r in _rows(batch):
            for message in filter(None, str(r["warnings"]).split("\n")):
                report.warning(r["src"], message)
            if r["status"] == "written":
                report.ok(path=r["src"])
            elif r["status"] == "written by another run":
                report.written_by_another_run(r["src"], r["dst"])
            else:
                report.error(r["failed_path"], r["reason"], int(r["code"]))


class _Table:
    """A report that keeps one row per file: path, output, status, reason, exit code."""

    def __init__(self, jobs):
        self.output = {str(j.src): str(j.dst) for j in jobs}
        self.dst_src = {str(j.dst): str(j.src) for j in jobs}
        self.rows, self.warnings = [], {}
        self.failed = 0

    def _src(self, path):
        return self.dst_src.get(str(path), str(path))

    def error(self, path, reason, code):
        self.failed += 1
        src = self._src(path)
        self.rows.append((src, self.output.get(src, ""), "failed", reason, code))

    def warning(self, path, message):
        self.warnings.setdefault(str(path), []).append(message)

    def ok(self, skipped=False, path=None):
        src = str(path)
        self.rows.append((src, self.output.get(src, ""), "skipped" if skipped else "written", "", 0))

    def written_by_another_run(self, path, output):
        self.rows.append((str(path), str(output), "skipped", "written by another run", 0))

    def frame(self):
        import pandas as pd

        table = pd.DataFrame(self.rows, columns=["path", "output", "status", "reason", "exit_code"])
        table["warnings"] = ["; ".join(self.warnings.get(p, [])) for p in table["path"]]
        return table.sort_values("path", ignore_index=True)


def process(source, dest, spec, *, key=None, batch_size: int = 8, num_actors: int | None = None,
            cpus_per_actor: float | None = None, gpus_per_actor: float = 0.0, overwrite: bool = False,
            recursive: bool = False, out_format: str | None = None, quality: int = 95,
            max_pixels: int = DEFAULT_MAX_PIXELS, allow_truncated: bool = False, strip: bool = False,
            bucket: bool | str = "auto", address: str | None = None):
    """Run the pipeline ``spec`` over the images of ``source`` into the folder ``dest`` on
    Ray Data; the per-file result table.

    The same run as ``imgproc run SPEC SOURCE DEST`` (same output paths mirroring the
    input tree, same bytes, same reasons; existing outputs skipped unless ``overwrite``),
    spread over a Ray cluster (see the module doc for the stages and resources).

    Args:
        source: a folder (its image files, sorted by relative path; subfolders with
            ``recursive``), a glob (``"photos/**/*.jpg"``), or a list of files.
        dest: the output folder (created).
        spec: an :class:`imgproc.Pipeline`, a spec list ``[{"op": ...}, ...]`` or its JSON
            text; parsed before Ray starts (a bad spec raises ``ValueError`` at once).
        key: ``jax.random.key(seed)`` (or an int seed) for a pipeline with random stages:
            the file at position ``i`` of the sorted inputs gets ``fold_in(key, i)``, as
            with ``imgproc run --seed``.
        batch_size: images of one shape per pipeline call (partial batches padded to the
            next power of two).
        num_actors: compute actors; default: as many as the cluster's CPUs allow with
            ``cpus_per_actor`` each and :data:`TASK_CPUS` left for read/write tasks.
        cpus_per_actor: CPUs each actor asks for (default 1, less on a one-CPU cluster).
        gpus_per_actor: GPUs each actor asks for (0: CPU actors).
        overwrite: replace existing outputs (atomically); without it they are skipped.
        recursive, out_format, quality, max_pixels, allow_truncated, strip: as the
            command line's ``--recursive``, ``--format``, ``--quality``,
            ``--max-pixels``, ``--allow-truncated``, ``--strip``.
        bucket: :class:`imgproc.Pipeline`'s ``bucket`` (``"auto"``, as the command line:
            the first two sizes, and a size that has come 16 times, at their exact size,
            the others in a few padded canvases; ``True``, ``False``) when ``spec`` is not already a pipeline.
        address: the Ray cluster (``HOST:PORT``, ``ray://HOST:PORT``, ``"auto"``); None
            uses an initialised Ray, ``RAY_ADDRESS``, or starts a local one.

    Returns:
        a ``pandas.DataFrame`` sorted by path, one row per input: ``path``, ``output``,
        ``status`` (``"written"``, ``"skipped"`` (output exists) or ``"failed"``),
        ``reason`` (the command line's, for failures), ``exit_code`` (the command line's
        code for that failure, 0 otherwise), ``warnings``.

    Raises:
        ValueError: a bad spec, a random pipeline without ``key``, or resources that
            would starve the read and write tasks.
        UnavailableError: Ray not installed or the cluster unreachable.
        InputError, OutputError: no images in ``source``; ``dest`` cannot be created.
    """
    from imgproc.io.run_options import RunOptions
    from imgproc.io.folder_plan import plan_folder
    from imgproc.io.folder_runner import jobs_to_do

    pipe = _pipeline(spec, bucket)
    _key_data(pipe, key)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 1024:
        raise ValueError(f"batch_size must be an integer from 1 to 1024; got {batch_size!r}")
    inputs = tuple(str(s) for s in source) if isinstance(source, (list, tuple)) else (str(source),)
    if out_format is not None and not str(out_format).startswith("."):
        out_format = "." + str(out_format).lower()
    opts = RunOptions(input=inputs[0], inputs=inputs, output=str(dest), quality=quality, overwrite=overwrite,
                      recursive=recursive, out_format=out_format, max_pixels=max_pixels, allow_truncated=allow_truncated,
                      strip=strip, batch_size=batch_size)
    jobs = plan_folder(opts)
    table = _Table(jobs)
    todo = jobs_to_do(jobs, opts, table)
    run_jobs(pipe, todo, opts, table, key=key, address=address, num_actors=num_actors, cpus_per_actor=cpus_per_actor,
             gpus_per_actor=gpus_per_actor)
    return table.frame()
