"""Write the fuzzing seed corpus (small valid and odd images of every allowed format)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bad_inputs import CASES  # noqa: E402

out = Path(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus")
out.mkdir(parents=True, exist_ok=True)
for case in CASES:
    if case.name.startswith("bomb"):
        continue
    (out / case.name).write_bytes(case.make())
print(f"{len(list(out.iterdir()))} seeds in {out}")
