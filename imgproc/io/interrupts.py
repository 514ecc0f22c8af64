"""Ctrl-C and SIGTERM for the whole command: recorded by a handler, honoured at safe
points. Imports only the standard library, so :func:`imgproc.cli.main` installs the
handlers before NumPy and JAX are imported (a signal during those imports is kept too)."""

from __future__ import annotations

import signal
import threading

__all__ = ["INTERRUPTS", "Interrupts"]


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
        self._previous = []  # one {signal: handler} per enclosing ``with``

    def __enter__(self):
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                try:
                    previous[sig] = signal.signal(sig, self._record)
                except (ValueError, OSError):
                    pass
        self._previous.append(previous)
        return self

    def _record(self, signum, frame):
        self.received.set()

    def stop_point(self):
        """Raise ``KeyboardInterrupt`` (once) if a signal came since the last one."""
        if self.received.is_set():
            self.received.clear()
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        for sig, handler in self._previous.pop().items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError):
                pass
        self.stop_point()  # a signal after the last safe point still ends the run as interrupted
        return False


# The command's one instance: its entry point holds it from the start, so a signal while
# the pipeline is built or compiled is also kept for the run's first safe point.
INTERRUPTS = Interrupts()
