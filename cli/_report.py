"""What a run says on stderr: errors, warnings, progress and the summary.

:class:`Reporter` speaks for folder runs (text lines, JSON lines with
``--log-format json``, or a rich progress bar on a terminal); :class:`OneFileReport` for a
single file (one ``error: PATH: reason`` or ``warning: PATH: message`` line, no progress
and no summary). Both write under :data:`imgproc.io.native_stderr.LOCK`.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import click

from imgproc.io.native_stderr import LOCK as NATIVE_STDERR_LOCK
from imgproc.io.run_options import RunOptions

# no ETA before this many images were processed and this many seconds went by
ETA_MIN_IMAGES = 3
ETA_MIN_SECONDS = 2.0


class Reporter:
    """Errors, warnings, progress and the summary, as text or JSON lines on stderr."""

    def __init__(self, total: int, opts: RunOptions):
        self.total, self.opts = total, opts
        self.json = opts.log_format == "json"
        self.done = self.failed = self.written = self.skipped = self.raced = 0
        self.failures: list[tuple[str, str, int]] = []
        self.start = time.monotonic()
        self.last_log = self.start
        self.lock = threading.Lock()
        self.bar = None
        if not opts.quiet and not self.json and _stderr_is_tty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            # every column labelled: "imgproc ━━━━ done 3/20  rate 1.5 images/s  ETA 11s  1 failed"
            self.bar = Progress(TextColumn("[bold]imgproc"), BarColumn(), TextColumn("done"), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[eta]}"),
                                TextColumn("{task.fields[fails]}"),
                                console=Console(stderr=True, highlight=False), transient=False,
                                auto_refresh=False)  # redrawn in _tick, under the capture lock
            self.task = self.bar.add_task("run", total=total, rate="rate -", eta="ETA -", fails="")
            self.bar.start()

    # Both hold the native-stderr lock while writing: a decoder thread may have fd 2
    # pointed at a capture file (imgproc.io.native_stderr), and our lines must not land there.
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

    def fatal(self, reason, code):
        """An error of the run itself, not of a file (an internal error): one ``error:``
        line or JSON event (``path`` null); no file is counted."""
        with self.lock:
            if self.json:
                self._event(event="error", path=None, reason=reason, exit_code=code)
            else:
                self._line(f"error: {reason}")

    def warning(self, path, message):
        if self.opts.quiet:
            return
        with self.lock:
            if self.json:
                self._event(event="warning", path=str(path), message=message)
            else:
                self._line(f"warning: {path}: {message}")

    def ok(self, skipped=False, path=None):
        with self.lock:
            self.done += 1
            if skipped:
                self.skipped += 1
            else:
                self.written += 1
            self._tick()

    def written_by_another_run(self, path, output):
        """``output`` appeared while this run worked on ``path``: another run (one on
        the same folder) wrote it. Skipped, not an error: a ``note:`` line (JSON: a
        ``skipped`` event), counted apart in the summary."""
        with self.lock:
            self.done += 1
            self.raced += 1
            if self.json:
                self._event(event="skipped", path=str(path), output=str(output), reason="written by another run")
            elif not self.opts.quiet:
                self._line(f"note: {output}: skipped (written by another run)")
            self._tick()

    def rate(self) -> float:
        """Images written a second, what the progress and the summary show (files skipped
        or failed do not count: a rerun that skipped everything wrote nothing)."""
        elapsed = time.monotonic() - self.start
        return self.written / elapsed if elapsed > 0 else 0.0

    def _work_rate(self) -> float:
        """Files done a second, skipped ones aside (failed ones are part of the work left)."""
        elapsed = time.monotonic() - self.start
        return (self.done - self.skipped - self.raced) / elapsed if elapsed > 0 else 0.0

    def eta(self) -> float | None:
        """Seconds left, or None while the rate means nothing yet: before
        :data:`ETA_MIN_IMAGES` images were processed (skipped ones do not count) and
        :data:`ETA_MIN_SECONDS` went by (the first batch includes compiling)."""
        elapsed = time.monotonic() - self.start
        rate = self._work_rate()
        if self.done - self.skipped - self.raced < ETA_MIN_IMAGES or elapsed < ETA_MIN_SECONDS or rate <= 0:
            return None
        return (self.total - self.done) / rate

    def _tick(self):
        now = time.monotonic()
        rate = self.rate()
        eta = self.eta()
        eta_text = "-" if eta is None else f"{eta:.0f}s"
        if self.bar is not None:
            with NATIVE_STDERR_LOCK:
                self.bar.update(self.task, completed=self.done, rate=f"rate {rate:.1f} images/s", eta=f"ETA {eta_text}",
                                fails=f"{self.failed} failed" if self.failed else "")
                self.bar.refresh()
            return
        if self.opts.quiet or now - self.last_log < self.opts.log_interval:
            return
        self.last_log = now
        if self.json:
            self._event(event="progress", done=self.done, total=self.total, failed=self.failed,
                        images_per_s=round(rate, 2), eta_s=None if eta is None else round(eta, 1))
        else:
            self._line(f"progress: done {self.done}/{self.total}, rate {rate:.1f} images/s, ETA {eta_text}, failed {self.failed}")

    def summary(self, *, interrupted=False, stopped=None):
        if self.bar is not None:
            self.bar.stop()
        elapsed = time.monotonic() - self.start
        if self.json:
            self._event(event="summary", total=self.total, written=self.written, skipped=self.skipped,
                        skipped_by_another_run=self.raced, failed=self.failed, not_done=self.total - self.done, seconds=round(elapsed, 3),
                        images_per_s=round(self.rate(), 2), interrupted=interrupted, stopped=stopped,
                        failures=[{"path": p, "reason": r, "exit_code": c} for p, r, c in self.failures])
            return
        if self.opts.quiet and not (self.failed or interrupted or stopped):
            return
        head = "interrupted" if interrupted else ("stopped" if stopped else "summary")
        text = (f"{head}: {self.written} written, {self.skipped} skipped (output exists), "
                + (f"{self.raced} skipped (written by another run), " if self.raced else "")
                + f"{self.failed} failed"
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


class OneFileReport:
    """A single file's run: its error or warnings as text lines, nothing else (the exit
    code says how it went)."""

    def __init__(self, opts: RunOptions):
        self.opts = opts
        self.failed = 0

    def _line(self, text: str):
        with NATIVE_STDERR_LOCK:
            click.echo(text, err=True)

    def error(self, path, reason, code):
        self.failed += 1
        self._line(f"error: {path}: {reason}")

    def fatal(self, reason, code):
        self.failed += 1
        self._line(f"error: {reason}")

    def warning(self, path, message):
        if not self.opts.quiet:
            self._line(f"warning: {path}: {message}")

    def ok(self, skipped=False, path=None):
        pass

    def written_by_another_run(self, path, output):
        if not self.opts.quiet:
            self._line(f"note: {output}: skipped (written by another run)")

    def summary(self, *, interrupted=False, stopped=None):
        if interrupted:
            self._line("error: interrupted")
