"""benchmarks/performance_page.py: the users' page copies every GPU run's tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import performance_page  # noqa: E402

GPU = """## GPU: NVIDIA H200 (`make bench-gpu`, 2026-11-26)

The first run's text.

### Gaussian blur, 8x4x4x3 float32 on the device

| implementation | median ms | notes |
| --- | ---: | --- |
| copy (x + 0) | 0.09 | 100% of copy bandwidth |

## GPU: NVIDIA H200, 2026-11-30 (`python benchmarks/gpu.py --only morphology`)

The second run's text.

### Erosion and opening, 5×5 square, 2x8x8x3 on the device

| implementation | median ms | images/s | notes |
| --- | ---: | ---: | --- |
| imgproc erosion (jit), uint8 | 0.53 | 15076 | 16% of the uint8 copy's time |
"""


def test_every_gpu_run_is_on_the_page(tmp_path):
    (tmp_path / "RESULTS.md").write_text("# Benchmark results\n\nWritten by `make bench` on 2026-11-29.\n",
                                         encoding="utf-8")
    (tmp_path / "RESULTS_GPU.md").write_text(GPU, encoding="utf-8")
    page = performance_page.build(tmp_path)
    gpu = page[page.index("## GPU"):]
    assert "The first run's text." in gpu and "The second run's text." in gpu
    assert gpu.index("The first run's text.") < gpu.index("| copy (x + 0) | 0.09") < gpu.index("The second run's text.")
    assert "| imgproc erosion (jit), uint8 | 0.53 | 15076 images/s; 16% of the uint8 copy's time |" in gpu
