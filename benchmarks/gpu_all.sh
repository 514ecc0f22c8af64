#!/usr/bin/env bash
# Every GPU measurement in one run, for a short lease on a GPU machine whose python3 has
# jax[cuda], torch and torchvision (no install step): the Pallas kernel's parity and tile
# sweep, then gpu.py with the fastest tile, then the denoising table and BM3D on 12 MP.
# Usage: benchmarks/gpu_all.sh OUT_DIR   (each part has its own time limit; logs in OUT_DIR)
set -u
out=${1:?usage: benchmarks/gpu_all.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")"
# the package as pyproject.toml maps it (imgproc.kernels, .cli, .docs live beside imgproc/),
# without an install: a folder of links on PYTHONPATH
site=$(mktemp -d); mkdir "$site/imgproc"
ln -s "$PWD"/../imgproc/* "$site/imgproc/"
for sub in kernels cli docs; do ln -s "$PWD/../$sub" "$site/imgproc/$sub"; done
export PYTHONPATH=$site PYTHONUNBUFFERED=1
python3 -c "import imgproc.kernels, imgproc.cli; print('imgproc from', imgproc.__file__)" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
python3 -c "import jax, torch; print('jax', jax.__version__, jax.devices(), 'torch', torch.__version__)"
timeout "${PALLAS_S:-130}" python3 gpu_pallas.py --out "$out/pallas.json" >"$out/pallas.log" 2>&1
tail -20 "$out/pallas.log"
best=$(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['best']; print(b.split()[1] if b else '')" "$out/pallas.json" 2>/dev/null)
timeout "${GPU_S:-150}" python3 gpu.py --out "$out/RESULTS_GPU.md" ${best:+--pallas-tile "$best"} >"$out/gpu.log" 2>&1
tail -45 "$out/gpu.log"
timeout "${DENOISE_S:-200}" python3 gpu_denoise.py --out "$out/gpu_denoise.md" --parts table,bm3d,speed --repeats 2 >"$out/denoise.log" 2>&1
tail -45 "$out/denoise.log"
