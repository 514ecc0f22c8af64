"""The one timing harness of benchmarks/: a round-robin timer, the row type, declared targets
and the markdown writer. Every benchmark script times through :func:`time_group`.

    rows = time_group("gaussian_sigma1_2048", [
        Case("imgproc_jit", "imgproc gaussian_blur (jit)", lambda: f(x)),
        Case("opencv", "OpenCV cv2.GaussianBlur", lambda: cv2.GaussianBlur(...)),
    ], repeats=7)
    Target("Gaussian σ=1 ≤ 2.0× OpenCV", group="gaussian_sigma1_2048", name="imgproc_jit",
           baseline="opencv", at_most=2.0).evaluate(rows)

Groups and rows are found by their ids (``group``, ``name``), never by their titles.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import resource
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence


def block(x):
    """Wait for the JAX arrays in ``x`` (any pytree; other values pass through)."""
    import jax  # here, so that the harness itself imports without jax (its test)

    return jax.block_until_ready(x)


def command_env(**extra) -> dict:
    """The environment the whole-command rows run their processes in: this one, less
    ``PYTHONDONTWRITEBYTECODE``, which the sessions of this machine set and a user's shell
    does not. With it, an editable install compiled imgproc's ~60 modules from source in
    every run (0.1 s of a 1.2 s command); an installed package never does. ``extra``:
    variables to set."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, **extra)


def error_line(err: BaseException, limit: int = 200) -> str:
    """``"Type: first line of the message"`` (at most ``limit`` characters of the message):
    a row or note for something that failed, in a table or a log."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0][:limit]}" if lines else type(err).__name__


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the whole-command rows)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


@dataclass(frozen=True)
class Case:
    """One implementation of a group: ``fn()`` does the work once."""

    name: str  # stable id within the group, e.g. "opencv"
    label: str  # human text for tables
    fn: Callable[[], object]
    images: int | None = None  # per call, for an images/s column
    megapixels: float | None = None  # per call, for a megapixels/s column


@dataclass(frozen=True)
class Row:
    """One implementation's measurement."""

    group: str  # stable id of the group, e.g. "gaussian_sigma1_2048"
    name: str  # stable id of the implementation, e.g. "opencv"
    label: str
    seconds: float  # median seconds per call
    repeats: int
    images: int | None = None
    megapixels: float | None = None
    cores: float | None = None  # process CPU time / wall time while timed (synchronous calls only)
    notes: str = ""

    @property
    def ms(self) -> float:
        return self.seconds * 1e3


@dataclass(frozen=True)
class Group:
    """A table: its id, its title, and the row its ratio column divides by (if any)."""

    id: str
    title: str
    baseline: str | None = None


def round_order(cases: Sequence, k: int) -> list:
    """The order of round ``k``: as given for round 0, then a permutation seeded by ``k``
    (the same for every run, so a run can be repeated)."""
    return list(cases) if k == 0 else random.Random(k).sample(list(cases), len(cases))


def time_group(group: str, cases: Sequence[Case], repeats: int, *, calls: int = 1, settle: bool = False,
               clock: Callable[[], float] = time.perf_counter, sync: Callable = block) -> list[Row]:
    """Time the ``cases`` of one group in turns and return one :class:`Row` each.

    One warm-up call of each case first (compilation, caches); then ``repeats`` rounds, each
    timing every case once, so a change in the machine's load hits every case alike. The
    first round takes the cases in order, later ones in a shuffled order (:func:`round_order`),
    so no case always follows the same one: a case that leaves the process in a costly state
    is not paid for by the same neighbour in every round (in recipes.py the case after
    augmax's measured 75-90 ms in every round against 65-73 for the same recipe elsewhere,
    untimed call or not).
    A sample is ``calls`` calls issued back to back and one ``sync`` on the last result,
    divided by ``calls``: ``calls=1`` blocks on every call (CPU), ``calls=30`` lets a GPU queue
    them as a training loop does. With ``settle`` each sample is preceded by one untimed call
    of the same case, so it does not pay for what the previous case left behind. A row's
    ``seconds`` is the median of its samples.
    """
    cases = list(cases)
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate case names in group {group!r}: {names}")
    for case in cases:
        sync(case.fn())
    samples = {c.name: [] for c in cases}
    cpu = {c.name: 0.0 for c in cases}
    for k in range(repeats):
        for case in round_order(cases, k):
            if settle:
                sync(case.fn())
            c0, t0 = cpu_seconds(), clock()
            for _ in range(calls):
                out = case.fn()
            sync(out)
            samples[case.name].append((clock() - t0) / calls)
            cpu[case.name] += cpu_seconds() - c0
    rows = []
    for case in cases:
        wall = sum(samples[case.name]) * calls
        rows.append(Row(group, case.name, case.label, statistics.median(samples[case.name]), repeats,
                        images=case.images, megapixels=case.megapixels,
                        cores=cpu[case.name] / wall if calls == 1 and wall > 0 else None))
    return rows


# --------------------------------------------------------------------------- finding rows


def find(rows: Sequence[Row], group: str, name: str) -> Row | None:
    """The row with these ids, or None."""
    return next((r for r in rows if r.group == group and r.name == name), None)


@dataclass(frozen=True)
class Target:
    """A declared bound on ``seconds(name) / seconds(baseline)`` in ``group`` (on ``seconds(name)``
    itself without a baseline). "imgproc ≥ 20× faster than dm-pix" is ``name="dmpix",
    baseline="imgproc", at_least=20``."""

    text: str
    group: str
    name: str
    baseline: str | None = None
    at_most: float | None = None
    at_least: float | None = None
    fmt: str = "{:.2f}×"

    def evaluate(self, rows: Sequence[Row]) -> tuple[float | None, str]:
        """``(value, verdict)``: verdict "yes", "**missed**" or "not measured (no row ...)"."""
        ids = [self.name] + ([self.baseline] if self.baseline else [])
        found = {n: find(rows, self.group, n) for n in ids}
        missing = [f"{self.group}/{n}" for n, r in found.items() if r is None]
        if missing:
            return None, f"not measured (no row {', '.join(missing)})"
        value = found[self.name].seconds / (found[self.baseline].seconds if self.baseline else 1.0)
        ok = (self.at_most is None or value <= self.at_most) and (self.at_least is None or value >= self.at_least)
        return value, "yes" if ok else "**missed**"


def targets_table(targets: Sequence[Target], rows: Sequence[Row]) -> str:
    lines = ["| target | measured | met? |", "|---|---:|---|"]
    for t in targets:
        value, verdict = t.evaluate(rows)
        lines.append(f"| {t.text} | {'' if value is None else t.fmt.format(value)} | {verdict} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- writing


def _ms(ms: float) -> str:
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"


def group_table(group: Group, rows: Sequence[Row], heading: str = "##") -> str:
    """One group's markdown table: median ms, then the columns its rows have (images/s,
    megapixels/s, time ratio to the group's baseline row, cores busy, notes)."""
    rows = [r for r in rows if r.group == group.id]
    base = find(rows, group.id, group.baseline) if group.baseline else None
    columns = [("implementation", "---", lambda r: r.label), ("median ms", "---:", lambda r: _ms(r.ms))]
    if any(r.images for r in rows):
        columns.append(("images/s", "---:", lambda r: f"{r.images / r.seconds:.0f}" if r.images else ""))
    if any(r.megapixels for r in rows):
        columns.append(("megapixels/s", "---:", lambda r: f"{r.megapixels / r.seconds:.1f}" if r.megapixels else ""))
    if base is not None:
        columns.append((f"time ÷ {base.label}", "---:", lambda r: f"{r.seconds / base.seconds:.2f}×"))
    if any(r.cores is not None for r in rows):
        columns.append(("cores busy", "---:", lambda r: "" if r.cores is None else f"{r.cores:.2f}"))
    if any(r.notes for r in rows):
        columns.append(("notes", "---", lambda r: r.notes))
    lines = [f"{heading} {group.title}", ""]
    lines += ["| " + " | ".join(c[i] for c in columns) + " |" for i in (0, 1)]
    lines += ["| " + " | ".join(f(r) for _, _, f in columns) + " |" for r in rows]
    return "\n".join(lines)


def tables(groups: Sequence[Group], rows: Sequence[Row], heading: str = "##") -> str:
    """The tables of the groups that have rows, in the order of ``groups``."""
    return "\n\n".join(group_table(g, rows, heading) for g in groups if any(r.group == g.id for r in rows))


def print_group(group: Group, rows: Sequence[Row]) -> None:
    print()
    print(group_table(group, rows))


# --------------------------------------------------------------------------- saving


def save(path: Path, groups: Sequence[Group], rows: Sequence[Row]) -> None:
    """Groups and rows as JSON (the second process of run.py, gpu.py's results)."""
    Path(path).write_text(json.dumps({"groups": [dataclasses.asdict(g) for g in groups],
                                      "rows": [dataclasses.asdict(r) for r in rows]}, indent=1, ensure_ascii=False))


def load(path: Path) -> tuple[list[Group], list[Row]]:
    data = json.loads(Path(path).read_text())
    return [Group(**g) for g in data["groups"]], [Row(**r) for r in data["rows"]]
