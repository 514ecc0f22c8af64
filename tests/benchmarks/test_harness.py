"""benchmarks/harness.py: the round-robin timer, medians, and targets found by id."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import (Case, Group, Row, Target, command_env, find, group_table, load, round_order, save,  # noqa: E402
                     targets_table, time_group)


class FakeClock:
    """Advances only when a case runs: each call of case ``name`` takes ``cost[name]`` seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def make_cases(clock, log, costs):
    def fn(name, cost):
        def call():
            log.append(name)
            clock.now += cost.pop(0) if isinstance(cost, list) else cost
            return name
        return call

    return [Case(n, n.upper(), fn(n, c)) for n, c in costs.items()]


def test_round_robin_order_warmup_and_median():
    clock, log = FakeClock(), []
    # first value of each list is the warm-up call's cost
    cases = make_cases(clock, log, {"a": [99, 1, 5, 3], "b": [99, 2, 2, 8]})
    rows = time_group("g", cases, repeats=3, clock=clock, sync=lambda x: x)
    rounds = [c.name for k in range(3) for c in round_order(cases, k)]
    assert log == ["a", "b"] + rounds  # one warm-up each, then in turns
    assert sorted(rounds) == ["a"] * 3 + ["b"] * 3 and rounds[:2] == ["a", "b"]
    assert [(r.name, r.seconds, r.repeats) for r in rows] == [("a", 3, 3), ("b", 2, 3)]
    assert all(r.group == "g" for r in rows)


def test_async_calls_and_settle():
    clock, log, synced = FakeClock(), [], []
    cases = make_cases(clock, log, {"a": 1.0, "b": 2.0})
    rows = time_group("g", cases, repeats=2, calls=4, settle=True, clock=clock, sync=synced.append)
    # warm-up, then per round: a settle call and 4 timed calls of a, the same for b
    assert log == ["a", "b"] + [c.name for k in range(2) for c in round_order(cases, k) for _ in range(5)]
    assert len(synced) == 2 + 2 * 2 * 2  # one sync per warm-up, settle call and sample
    assert [r.seconds for r in rows] == [1.0, 2.0]  # per call
    assert all(r.cores is None for r in rows)  # not meaningful with queued calls


def test_rounds_vary_which_case_comes_before_which():
    """A case that leaves the process slow must not always precede the same case: the
    rounds after the first are shuffled, the same way in every run."""
    names = list("abcdef")
    orders = [round_order(names, k) for k in range(5)]
    assert len({order[order.index("f") - 1] for order in orders}) > 1  # what comes before "f" varies
    assert orders[0] == names and round_order(names, 3) == orders[3]
    assert all(sorted(order) == names for order in orders)


def test_duplicate_names_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        time_group("g", [Case("x", "", lambda: 0), Case("x", "", lambda: 0)], 1, sync=lambda x: x)


ROWS = [
    Row("gauss", "imgproc", "imgproc blur", 0.030, 7),
    Row("gauss", "opencv", "OpenCV blur", 0.020, 7),
    Row("gauss", "dmpix", "dm-pix blur", 0.600, 7),
    Row("other gauss", "opencv", "a row of another group", 1.0, 7),
]


def test_targets_look_rows_up_by_id():
    assert find(ROWS, "gauss", "opencv").seconds == 0.020
    assert find(ROWS, "gaus", "opencv") is None  # no partial matches
    value, verdict = Target("≤ 2× OpenCV", "gauss", "imgproc", baseline="opencv", at_most=2.0).evaluate(ROWS)
    assert value == pytest.approx(1.5) and verdict == "yes"
    value, verdict = Target("≥ 25× dm-pix", "gauss", "dmpix", baseline="imgproc", at_least=25).evaluate(ROWS)
    assert value == pytest.approx(20) and verdict == "**missed**"
    value, verdict = Target("< 0.1 s", "gauss", "imgproc", at_most=0.1).evaluate(ROWS)
    assert value == pytest.approx(0.03) and verdict == "yes"


def test_missing_rows_reported_clearly():
    value, verdict = Target("vs scipy", "gauss", "imgproc", baseline="scipy", at_most=1).evaluate(ROWS)
    assert value is None and verdict == "not measured (no row gauss/scipy)"
    table = targets_table([Target("vs scipy", "nope", "imgproc", baseline="scipy")], ROWS)
    assert "| vs scipy |  | not measured (no row nope/imgproc, nope/scipy) |" in table


def test_table_and_json_round_trip(tmp_path):
    group = Group("gauss", "Gaussian", baseline="opencv")
    text = group_table(group, ROWS)
    assert "| implementation | median ms | time ÷ OpenCV blur |" in text
    assert "| imgproc blur | 30.0 | 1.50× |" in text
    assert "another group" not in text
    save(tmp_path / "r.json", [group], ROWS)
    assert load(tmp_path / "r.json") == ([group], ROWS)


def test_whole_commands_run_as_in_a_users_shell(monkeypatch):
    """The whole-command rows drop PYTHONDONTWRITEBYTECODE (set by this machine's sessions,
    not by a user's shell: every run would compile imgproc's modules from source)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("HOME", "/home/someone")
    env = command_env(XDG_CACHE_HOME="/tmp/cache")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["HOME"] == "/home/someone" and env["XDG_CACHE_HOME"] == "/tmp/cache"


def test_error_line_is_the_type_and_the_first_line_of_the_message():
    from harness import error_line

    assert error_line(ValueError("bad tile\nmore detail")) == "ValueError: bad tile"
    assert error_line(RuntimeError("x" * 300), limit=10) == "RuntimeError: " + "x" * 10
    assert error_line(KeyError()) == "KeyError"
