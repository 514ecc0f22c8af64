"""The one place where failures become an ``error: ...`` line and the design's exit code."""

from __future__ import annotations

import os
import sys
import traceback

import click

from imgproc.errors import ImgprocError


class ImgprocGroup(click.Group):
    """A click group whose commands raise, and never exit from inside a helper: every
    exception a command lets out is mapped here.

    * :class:`imgproc.errors.ImgprocError` -> ``error: PATH: reason``, its ``exit_code``;
    * ``KeyboardInterrupt`` -> ``error: interrupted``, 130;
    * ``BrokenPipeError`` (the reader of the output closed it) -> nothing more, 141;
    * ``ValueError`` (a bad option value that click could not check) -> 2;
    * click's own exceptions (usage errors, ``ctx.exit``) pass through;
    * anything else -> one ``error: internal error: ...`` line, 70 (the traceback with
      ``--debug``).
    """

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except ImgprocError as e:
            self._exit_with(ctx, str(e), e.exit_code)
        except KeyboardInterrupt:
            self._exit_with(ctx, "interrupted", 130)
        except BrokenPipeError:
            # the reader closed the pipe (`imgproc ops | head`): stop quietly, 141 as a
            # command killed by SIGPIPE; stdout goes nowhere so the exit's flush cannot fail
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(141)
        except ValueError as e:
            self._exit_with(ctx, str(e), 2)
        except Exception as e:  # noqa: BLE001 - the one place internal errors are reported
            debug = bool(ctx.params.get("debug"))
            if debug:
                traceback.print_exc()
            self._exit_with(ctx, f"internal error: {type(e).__name__}: {e}" + ("" if debug else " (run with --debug for the traceback)"), 70)

    @staticmethod
    def _exit_with(ctx, message: str, code: int):
        click.echo(f"error: {message}", err=True)
        ctx.exit(code)
