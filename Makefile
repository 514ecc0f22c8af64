# imgproc: set-up commands. Each target creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test test-fast test-gpu slow-tests bench bench-gpu clean

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# `make demo` needs the package alone; `make test` adds the test extras, `make bench` the
# bench extras. Each install has its own stamp, so the targets work in any order.
$(VENV)/.installed-demo: pyproject.toml $(VENV)/bin/activate
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/bin/activate
	$(PIP) install --quiet -e ".[test]"
	touch $@

$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed
	$(PIP) install --quiet -e ".[test,bench]"
	touch $@

demo: $(VENV)/.installed-demo
	$(PY) scripts/demo.py

# Two worker processes (pytest-xdist): the suite is mostly single-threaded tracing and
# compiling. Tests marked with one xdist_group share a worker (--dist loadgroup): the Ray
# tests' local cluster starts once. `make test` is the whole suite (what CI runs);
# `make test-fast` leaves out the slowest tests (tests/slow_tests.txt), for a change's own
# loop; `make slow-tests` measures the whole suite and writes that list again.
test: $(VENV)/.installed
	$(PY) -m pytest -n 2 --dist loadgroup

test-fast: $(VENV)/.installed
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow"

# On a machine with an NVIDIA GPU whose $(PYTHON) already has jax[cuda] and the test extras:
# the suite on the GPU, installing nothing (no network); logs and summary in out/gpu-check
# (benchmarks/gpu_check.sh; PART=1/2 then PART=2/2 runs it in two halves;
# `benchmarks/gpu_check.sh OUT bench` runs the GPU benchmarks).
test-gpu:
	PYTHON=$(PYTHON) benchmarks/gpu_check.sh out/gpu-check tests

slow-tests: $(VENV)/.installed
	$(PY) -m pytest -n 2 --dist loadgroup --durations=0 -q > .durations.txt || true
	$(PY) scripts/slow_tests.py .durations.txt --budget 240

bench: $(VENV)/.installed-bench
	$(PY) benchmarks/run.py
	$(PY) benchmarks/performance_page.py

# On a machine with an NVIDIA GPU: installs jax[cuda12] and torchvision into .venv, writes
# benchmarks/RESULTS_GPU.md and RESULTS_GPU_DENOISE.md; the next `make bench` copies them
# into RESULTS.md. (A machine whose python3 already has them, offline: benchmarks/gpu_all.sh.)
bench-gpu: $(VENV)/.installed-bench
	$(PIP) install --quiet "jax[cuda12]" torch torchvision
	$(PY) benchmarks/gpu.py
	$(PY) benchmarks/gpu_denoise.py --out benchmarks/RESULTS_GPU_DENOISE.md

# Loader fuzzing (atheris), 10 minutes; not part of `make test`.
fuzz: $(VENV)/.installed
	$(PIP) install --quiet -e ".[fuzz]"
	$(PY) fuzz/make_seeds.py fuzz/corpus
	mkdir -p fuzz/artifacts
	$(PY) fuzz/fuzz_loader.py fuzz/corpus -max_total_time=600 -rss_limit_mb=4096 -timeout=20 -artifact_prefix=fuzz/artifacts/

clean:
	rm -rf $(VENV) out
