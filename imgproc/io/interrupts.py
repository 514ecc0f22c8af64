"""Ctrl-C and SIGTERM for the whole command: recorded by a handler, honoured at safe
points. Imports only the standard library, so :func:`imgproc.cli.main` installs the
handlers before NumPy and JAX are imported (a signal during those imports is kept too)."""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["GRACE_S", "INTERRUPTS", "Interrupts", "at_leave", "run_at_leave", "writing"]

# seconds a run has, after Ctrl-C or SIGTERM, to reach a safe point before the command
# leaves anyway (Interrupts.hard_exit): a decode or a computation may last minutes
GRACE_S = 1.0


# the open ``at_leave`` blocks, oldest first: what a command that leaves with os._exit
# still has to clean up (temporary files being written, a run's output folder)
_AT_LEAVE: list = []
_AT_LEAVE_LOCK = threading.Lock()


class at_leave:
    """``with at_leave(cleanup): ...``: while the block runs, a command that leaves with
    ``os._exit`` (:func:`run_at_leave`: :meth:`Interrupts._leave`, ``imgproc.cli``'s exit
    after an interrupt) calls ``cleanup()`` first, as the block's own ``finally`` would
    have; errors in it are ignored there."""

    def __init__(self, cleanup):
        self.cleanup = cleanup

    def __enter__(self):
        with _AT_LEAVE_LOCK:
            _AT_LEAVE.append(self)
        return self

    def __exit__(self, *exc):
        with _AT_LEAVE_LOCK:
            _AT_LEAVE.remove(self)
        return False


class writing(at_leave):
    """``with writing(tmp): ...``: ``tmp`` is a temporary file in flight while the block
    runs (:func:`imgproc.io.codec.write_atomically`); a command that leaves before the
    block ends removes it, so it leaves no partial output behind."""

    def __init__(self, path):
        self.path = os.fspath(path)
        super().__init__(self._remove)

    def _remove(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass


def run_at_leave() -> None:
    """Run the cleanups of the :class:`at_leave` blocks still open, the newest first (a
    write's temporary file goes before the output folder it is in is found empty): for a
    command that leaves with ``os._exit``, whose threads do not get to clean up."""
    with _AT_LEAVE_LOCK:
        blocks = list(reversed(_AT_LEAVE))
    for block in blocks:
        try:
            block.cleanup()
        except Exception:  # noqa: BLE001 - leaving anyway; the exit code says it was interrupted
            pass


class Interrupts:
    """Ctrl-C (SIGINT) and SIGTERM during a run. The handler only records the signal; the
    run stops at its next safe point (:meth:`stop_point`: between files, batches and
    writes), where ``KeyboardInterrupt`` is raised in the main thread, then cleans up and
    exits 130 with a partial summary.

    Why not raise from the handler, as Python does: a ``KeyboardInterrupt`` raised while
    JAX runs Python inside a compilation (a gc callback) is swallowed ("Exception
    ignored"), so the run went on and exited 0; raised elsewhere inside XLA's work, the
    process could crash on the way out (exit 139). A compilation therefore finishes
    before the run stops (a second or two). Outside a run (in the main thread only) the
    handlers are as before."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.received = threading.Event()
        self.honoured = threading.Event()  # a safe point raised for the last signal
        self._previous = []  # one {signal: handler} per enclosing ``with``
        self._wakeup = None  # (read fd, write fd, previous wakeup fd) of the outermost ``with``
        # The command's own (imgproc.cli.main): leave with 130 when no safe point comes
        # within GRACE_S of a signal, or at a second signal. Never in a library caller's process.
        self.hard_exit = False
        self.last_words = None  # called before such an exit (the run's partial summary)

    def __enter__(self):
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                try:
                    previous[sig] = signal.signal(sig, self._record)
                except (ValueError, OSError):
                    pass
            if not self._previous and previous:
                self._watch()
        self._previous.append(previous)
        return self

    def _watch(self):
        """Learn of a signal the moment it arrives. Python runs a handler only in the main
        thread between bytecodes, so not while that thread is inside a long decode or an
        XLA computation; the C-level handler writes the signal's number to the wakeup fd
        at once, and a thread reading it can keep the grace period."""
        r, w = os.pipe()
        os.set_blocking(w, False)
        try:
            previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(r)
            os.close(w)
            return
        self._wakeup = (r, w, previous)
        threading.Thread(target=self._watcher, args=(r,), name="imgproc-interrupts", daemon=True).start()

    def _watcher(self, r):
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if not data:
                os.close(r)
                return
            if any(b in (int(sig) for sig in self.SIGNALS) for b in data):
                self._signalled()

    def _signalled(self):
        self.received.set()
        if not self.hard_exit:
            return
        if self.honoured.is_set():  # a second signal while the run cleans up: leave now
            self._leave()
        if not self.honoured.wait(GRACE_S):
            self._leave()

    def _leave(self):
        """Exit with 130 from the watcher thread: the run did not reach a safe point in
        time. Outputs are whole or absent: the temporary files of writes in flight are
        removed first (:class:`writing`), then a folder the run created and left empty
        (:func:`run_at_leave`)."""
        try:
            run_at_leave()
            if self.last_words is not None:
                self.last_words()
            else:
                os.write(2, b"error: interrupted\n")
        finally:
            os._exit(130)

    def _record(self, signum, frame):
        self.received.set()

    def stop_point(self):
        """Raise ``KeyboardInterrupt`` (once) if a signal came since the last one."""
        if self.received.is_set():
            self.received.clear()
            self.honoured.set()
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        for sig, handler in self._previous.pop().items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError):
                pass
        if not self._previous and self._wakeup is not None:
            r, w, previous = self._wakeup
            self._wakeup = None
            try:
                signal.set_wakeup_fd(previous)
            except (ValueError, OSError):
                pass
            os.close(w)  # the watcher reads the end of the pipe and stops
        self.stop_point()  # a signal after the last safe point still ends the run as interrupted
        return False


# The command's one instance: its entry point holds it from the start, so a signal while
# the pipeline is built or compiled is also kept for the run's first safe point.
INTERRUPTS = Interrupts()
