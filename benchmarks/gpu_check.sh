#!/usr/bin/env bash
# The GPU lane (issue 43, `make test-gpu`): the test suite on this machine's GPU, then the GPU
# benchmarks, for a short lease on a GPU machine whose python3 already has jax[cuda] and the
# test extras (pytest, pytest-xdist, scipy, scikit-image, opencv, ...; torch and torchvision
# for the benchmarks). It installs nothing and needs no network: what is missing is listed
# in OUT_DIR/env.txt, and the tests that need it skip or fail as they would anywhere.
#
# Usage: benchmarks/gpu_check.sh OUT_DIR [tests|bench|all] [PYTEST_ARGS...]
#   tests  the suite but for the files below that start the command line, Ray, pip or
#          notebooks (nothing GPU-specific in them), WORKERS pytest processes (default 12;
#          0: one process, no xdist) sharing the GPU, stopped after TESTS_S seconds (default
#          360). PART=k/n runs the k-th of n shares of the test files (every n-th file of the
#          sorted list, from the k-th): on an H200 the whole lane took about 9 minutes with
#          12-14 workers (2026-11-30), so a 15-minute lease runs it as PART=1/2 and PART=2/2
#          in two calls. FILES="a b ..." runs only those test files or node ids (the
#          ignores above still apply to directories, not to a file named). Writes OUT_DIR/pytest.log (a line per test as it ends, so a stopped
#          run still lists what ran; skip reasons included), failures.txt (each failure's
#          traceback as it happens: benchmarks/pytest_failures_log.py), junit.xml and
#          summary.txt (the counts, the failures, the slowest tests), and prints summary.txt.
#   bench  benchmarks/gpu_all.sh OUT_DIR/bench: the Pallas kernel's parity and tile sweep,
#          gpu.py (RESULTS_GPU.md rows), gpu_denoise.py (about 8 minutes in all).
#   all    tests, then bench (the default). A device lease of 15 minutes holds the tests
#          and a rerun, or the tests and the benchmarks: run `tests` first.
# WHEELS=DIR installs DIR's wheels (no index, no dependencies) into a folder put first on
# PYTHONPATH: packages the machine lacks or has too old (on the H200 machine: simplejpeg,
# imagecodecs, PyWavelets, grain, and Pillow >= 13, pyproject.toml's floor).
# PYTHON (default python3) is the interpreter. GPU_CHECK_ANY_BACKEND=1 runs on whatever
# backend JAX has (a dry run of this script on a CPU machine).
# Exit status: pytest's (0 all passed, 1 failures, 124 stopped at TESTS_S), 2 no GPU or no
# pytest; with `bench` alone, gpu_all.sh's.
set -u
out=${1:?usage: benchmarks/gpu_check.sh OUT_DIR [tests|bench|all] [PYTEST_ARGS...]}
mode=${2:-all}
shift $(( $# < 2 ? $# : 2 ))
case $mode in tests|bench|all) ;; *) echo "mode must be tests, bench or all; got $mode" >&2; exit 2 ;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}

# The package as pyproject.toml maps it (imgproc.kernels, .cli, .docs live beside imgproc/),
# without an install: a folder of links first on PYTHONPATH. PYTHONSAFEPATH keeps the
# checkout's own imgproc/ (no kernels, no cli) from shadowing it when a Python starts in
# the repository root (python -m pytest; the suite's child processes set it too).
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
mkdir "$site/imgproc"
ln -s "$root"/imgproc/* "$site/imgproc/"
for sub in kernels cli docs; do ln -s "$root/$sub" "$site/imgproc/$sub"; done
if [ -n "${WHEELS:-}" ]; then
  mkdir "$site/wheels"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site/wheels" "$WHEELS"/*.whl \
    || { echo "could not install the wheels in $WHEELS" >&2; exit 2; }
  PYTHONPATH=$site/wheels${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
# several pytest processes share one GPU: each allocates what it uses, not 75 % up front
export XLA_PYTHON_CLIENT_PREALLOCATE=false

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  (cd "$root" && git log -1 --format="commit %H %s" 2>/dev/null)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "$PY" -c "import sys, jax, imgproc, imgproc.kernels, imgproc.cli; print('python', sys.version.split()[0], 'jax', jax.__version__, jax.default_backend(), jax.devices()); print('imgproc from', imgproc.__file__)"
  for m in pytest xdist hypothesis scipy skimage cv2 PIL pywt ml_dtypes torch torchvision grain; do
    "$PY" -c "import $m; print('have $m', getattr($m, '__version__', ''))" 2>/dev/null || echo "MISSING $m"
  done
} >"$out/env.txt" 2>&1
cat "$out/env.txt"
backend=$("$PY" -c "import jax; print(jax.default_backend())" 2>/dev/null)
if [ "$backend" != gpu ] && [ -z "${GPU_CHECK_ANY_BACKEND:-}" ]; then
  echo "JAX's backend here is '${backend:-none}', not a GPU (GPU_CHECK_ANY_BACKEND=1 runs anyway)" >&2
  exit 2
fi

rc=0
if [ "$mode" != bench ]; then
  "$PY" -c "import pytest" 2>/dev/null || { echo "pytest is not installed for $PY" >&2; exit 2; }
  workers=${WORKERS:-12}
  parallel=()
  if [ "$workers" != 0 ] && "$PY" -c "import xdist" 2>/dev/null; then parallel=(-n "$workers" --dist loadgroup); fi
  # Left out: they start the command line, Ray, pip or Jupyter, whose GPU use is the library's
  # (covered by the rest); the command's own tests need its console script installed.
  ignore=(--ignore=tests/cli --ignore=tests/adapters/test_ray.py --ignore=tests/io/test_memory_budget.py
          --ignore=tests/io/test_loader_corpus.py --ignore=tests/test_start_up.py
          --ignore=tests/test_packaging.py --ignore=tests/test_notebooks.py)
  cd "$root"
  targets=(tests)
  if [ -n "${FILES:-}" ]; then  # test files or node ids, separated by spaces
    read -ra targets <<<"$FILES"
  elif [ -n "${PART:-}" ]; then  # k/n: every n-th test file of the sorted list, from the k-th
    k=${PART%/*} n=${PART#*/}
    left_out=$(printf '%s\n' "${ignore[@]}" | sed 's/^--ignore=//')  # a named file is run even if ignored
    mapfile -t targets < <(find tests -name 'test_*.py' | sort | grep -vF "$left_out" | awk -v k="$k" -v n="$n" '(NR - k) % n == 0')
  fi
  start=$(date +%s)
  : >"$out/failures.txt"
  # -o addopts=: no doctests (collecting imgproc/ as modules would import the checkout's
  # imgproc/ rather than the folder of links). -v: a line per test as it ends; the failures
  # log plugin is found on PYTHONPATH (benchmarks/).
  PYTHONPATH=$root/benchmarks:$PYTHONPATH PYTEST_FAILURES_LOG=$out/failures.txt \
  timeout -k 15 "${TESTS_S:-360}" "$PY" -m pytest "${targets[@]}" "${ignore[@]}" "${parallel[@]}" -v \
    -p no:cacheprovider -p pytest_failures_log -o addopts= -rfEs --durations=15 --junitxml="$out/junit.xml" "$@" \
    >"$out/pytest.log" 2>&1
  rc=$?
  {
    echo "pytest exit $rc after $(( $(date +%s) - start )) s ($([ $rc = 124 ] && echo "stopped at TESTS_S=${TESTS_S:-360}" || echo finished)); pytest-xdist: ${parallel[*]:-not used, one process}${PART:+; part $PART}${FILES:+; files $FILES}"
    grep -E "^(=+ )?[0-9]+ (passed|failed|error|skipped)|^=+ .*(passed|failed|error).* =+$" "$out/pytest.log" | tail -1
    for outcome in PASSED FAILED ERROR SKIPPED; do  # the per-test lines (xdist's, or one process's): there even
      # when stopped; not the short summary's "FAILED tests/..." lines, which repeat them
      echo "$outcome $(grep -cE "^\[gw[0-9]+\] \[ *[0-9]+%\] $outcome tests/|^tests/.*::.* $outcome( |$)" "$out/pytest.log")"
    done
    echo "--- failures and errors (tracebacks in failures.txt)"
    grep -E "(^| )(FAILED|ERROR) tests/" "$out/pytest.log" | sed -E 's/^.*(FAILED|ERROR) /\1 /; s/ +- .*$//; s/ +$//' | sort -u | grep . || echo "(none)"
    echo "--- skipped, by reason"
    grep -E "^SKIPPED " "$out/pytest.log" | sed -E 's/^SKIPPED \[[0-9]+\] [^ ]+: //' | sort | uniq -c | sort -rn | head -20
    echo "--- slowest"
    sed -n '/slowest .* durations/,/^$/p' "$out/pytest.log" | head -18
  } >"$out/summary.txt"
  cat "$out/summary.txt"
fi
if [ "$mode" != tests ]; then
  bash "$root/benchmarks/gpu_all.sh" "$out/bench"
  brc=$?
  [ "$mode" = bench ] && rc=$brc
fi
exit $rc
