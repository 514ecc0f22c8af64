"""Write tests/slow_tests.txt from a whole run's ``pytest --durations=0`` output: the tests
left out of the fast tier (``make test-fast``), slowest first, so that the rest take at most
``--budget`` seconds of worker time (two workers: about half of it on the clock).

    python -m pytest -n 2 --dist loadgroup --durations=0 > durations.txt
    python scripts/slow_tests.py durations.txt --budget 240
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

# modules whose cases run in a child process (tests/test_gradients.py: x64); the child
# honours the parent's -m, so their slow cases are listed here by hand
OWN_PROCESS = ("tests/test_gradients.py::test_image_gradient", "tests/test_gradients.py::test_option_gradients")
LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*)$")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("durations", type=Path)
    parser.add_argument("--budget", type=float, default=240.0, help="seconds of worker time the fast tier may take")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests" / "slow_tests.txt")
    args = parser.parse_args()
    seconds = defaultdict(float)
    for line in args.durations.read_text().splitlines():
        m = LINE.match(line)
        if m:
            seconds[m.group(3).strip()] += float(m.group(1))
    fast, total = [], 0.0
    for nodeid, s in sorted(seconds.items(), key=lambda kv: kv[1]):
        if total + s > args.budget:
            break
        fast.append(nodeid)
        total += s
    slow = sorted(set(seconds) - set(fast), key=lambda n: -seconds[n])
    # tests a module runs in a process of its own (its own durations never reach this
    # output): their entries are kept as they are
    if args.out.exists():
        slow += [n for n in args.out.read_text().splitlines() if n.startswith(OWN_PROCESS) and n not in slow]
    args.out.write_text("".join(n + "\n" for n in slow))
    print(f"{len(slow)} slow tests ({sum(seconds[n] for n in slow):.0f} s), {len(fast)} fast ({total:.0f} s) -> {args.out}")


if __name__ == "__main__":
    main()
