"""What a file command does once it has its pipeline: :func:`process` runs it from IN to
OUT (a file is a one-job run, a folder or glob one job per image), :func:`load_spec`
reads a pipeline from a JSON spec."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from imgproc.cli._report import OneFileReport, Reporter
from imgproc.errors import InputError
from imgproc.io.folder_plan import check_paths, is_folder_run, plan_file, plan_folder, removed_if_left_empty
from imgproc.io.folder_runner import run_jobs
from imgproc.io.run_options import RunOptions


def process(pipeline, opts: RunOptions, *, key=None) -> int:
    """Run ``pipeline`` from ``opts.input`` to ``opts.output``; the exit code.

    A file is checked (output writable, not the input, not existing without
    ``overwrite``) before any work and run as one job that stops at its failure: the exit
    code is that file's (65, 66, 73, 74, ...), with one ``error:`` line and no progress or
    summary; other errors (a bad option the pipeline rejects) go to the command's error
    handler. A folder or glob runs every image into the output folder (0 all done, 1 some
    failed, 74 disk full, 130 interrupted). ``key``: for pipelines with random stages
    (image ``i`` of the sorted inputs gets ``fold_in(key, i)``)."""
    check_paths(opts)
    if opts.ray_address is not None and opts.engine != "ray":
        import click

        raise click.UsageError("--ray-address needs --engine ray")
    if opts.engine == "ray":
        with removed_if_left_empty(opts.output):  # when it was created for a run that wrote nothing
            return _process_on_ray(pipeline, opts, key=key)
    if is_folder_run(opts):
        with removed_if_left_empty(opts.output):
            jobs = plan_folder(opts)
            return run_jobs(pipeline, jobs, opts, Reporter(len(jobs), opts), key=key)
    job = plan_file(opts)
    one = dataclasses.replace(opts, fail_fast=True)
    return run_jobs(pipeline, [job], one, OneFileReport(one), key=key, raise_unexpected=True)


def _process_on_ray(pipeline, opts: RunOptions, *, key=None) -> int:
    """A folder run on Ray Data (:mod:`imgproc.ray`): planned and checked here as a local
    run is, then connected (exit 69 when the cluster cannot be reached), then run with
    the same report and exit codes (0, 1, 130; a write error does not stop the others)."""
    import click

    import imgproc
    import imgproc.ray as engine
    from imgproc.io.folder_runner import INTERRUPTS, jobs_to_do

    if not is_folder_run(opts):
        raise click.UsageError("--engine ray runs folders, globs or several IN; a single file runs without it")
    if opts.fail_fast:
        raise click.UsageError("--fail-fast is not supported with --engine ray (every file is reported)")
    if not isinstance(pipeline, imgproc.Pipeline):
        raise click.UsageError("--verbose is not supported with --engine ray")
    jobs = plan_folder(opts)
    report = Reporter(len(jobs), opts)
    todo = jobs_to_do(jobs, opts, report)
    started = not engine.initialized()
    ray = engine.connect(opts.ray_address) if todo else None
    interrupted = False
    since = time.time()
    recorded = _Recording(report)
    try:
        with INTERRUPTS:
            engine.run_jobs(pipeline, todo, opts, recorded, key=key, stop_point=INTERRUPTS.stop_point)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if ray is not None and started:
            ray.shutdown()  # ends the local cluster this run started, or disconnects
    if interrupted:
        # the actors write whole outputs (atomically) before their status rows reach the
        # driver: count the ones this run wrote whose rows had not arrived yet
        for job in written_unreported(todo, recorded.reported, since):
            report.ok(path=str(job.src))
    report.summary(interrupted=interrupted)
    if interrupted:
        return 130
    return 1 if report.failed else 0


class _Recording:
    """A report that passes every call on to ``report`` and remembers the inputs reported."""

    def __init__(self, report):
        self.report, self.reported = report, set()

    def ok(self, skipped=False, path=None):
        self.reported.add(str(path))
        self.report.ok(skipped=skipped, path=path)

    def error(self, path, reason, code):
        self.reported.add(str(path))
        self.report.error(path, reason, code)

    def written_by_another_run(self, path, output):
        self.reported.add(str(path))
        self.report.written_by_another_run(path, output)

    def warning(self, path, message):
        self.report.warning(path, message)


def written_unreported(jobs, reported, since: float):
    """The ``jobs`` not in ``reported`` (input paths) whose output exists and was modified
    at or after ``since`` (``time.time()``): written by this run (an output from before,
    left for ``--overwrite``, is older)."""
    out = []
    for job in jobs:
        if str(job.src) in reported or str(job.dst) in reported:
            continue
        try:
            if Path(job.dst).stat().st_mtime >= since:
                out.append(job)
        except OSError:
            pass
    return out


def is_inline_spec(spec: str) -> bool:
    """Whether the command line's SPEC is written out itself: it starts with ``[`` (the
    JSON list) or ``{`` (one stage without its list, which :func:`load_spec` refuses with a
    usage error saying so, rather than "no such file") and names no file."""
    return spec.lstrip().startswith(("[", "{")) and not Path(spec).exists()


def spec_label(spec: str) -> str:
    """How an error names SPEC: its file, or "the spec" when written out inline."""
    return "the spec" if is_inline_spec(spec) else spec


def load_spec(spec, **options):
    """The :class:`imgproc.Pipeline` in the JSON file ``spec``, or written out in ``spec``
    itself when no such file exists and it starts with ``[`` (``imgproc run
    '[{"op": "gaussian_blur", "sigma": 2}]' in.jpg out.jpg``, as jq takes its filter);
    ``options`` go to ``Pipeline.from_spec``. An unreadable file is an input error (exit
    66); bad JSON or an invalid stage is a ``ValueError`` naming the file or "the spec" (a
    usage error, exit 2)."""
    import imgproc

    inline = is_inline_spec(spec)
    name = spec_label(spec)
    try:
        text = spec if inline else Path(spec).read_text()
    except FileNotFoundError:
        raise InputError(spec, "no such file (SPEC is a JSON file, or the JSON list itself)") from None
    except OSError as e:
        raise InputError(spec, f"cannot read ({e.strerror or e})") from None
    try:
        if inline and spec.lstrip().startswith("{"):
            json.loads(text)  # bad JSON is reported as such first
            raise ValueError("a pipeline spec is a JSON list of stages; got one stage: write it as "
                             f"[{spec.strip()}]")
        return imgproc.Pipeline.from_spec(text, **options)
    except json.JSONDecodeError as e:
        raise ValueError(f"{name}: not valid JSON ({e})") from None
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name}: {e}") from None
