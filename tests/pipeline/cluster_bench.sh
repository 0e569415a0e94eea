#!/usr/bin/env bash
# Issue 19's cluster benchmark in one call on a 4-GPU machine (no network needed), from the
# repository root with the wheels of `../shared/tools/offline-wheels.sh` in .whl/ and the
# real graphs in shared/data/road-topology/:
#   all NY and all FLA sources on 1, 2, 4 GPUs, 16,384 random FLA sources on 1 and 4 GPUs,
#   LocalCUDACluster (`sssp study --gpus`) and separate `dask scheduler` + `dask cuda worker`
#   processes (`sssp study --scheduler-file`); see tests/pipeline/cluster_bench.py.
# Writes $OUT/cluster-bench.md (tables), $OUT/cluster-bench.json (rows), logs.  About 5-7
# minutes; steps are skipped (and listed) past BUDGET_S (default 470) of the script's time.
set -uo pipefail
OUT=${OUT:-$PWD/cluster-bench-out}
mkdir -p "$OUT"
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > "$OUT/pip.log" 2>&1 || echo "wheel install failed (see pip.log)" >&2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
python3 -c 'import cupy, dask, distributed, dask_cuda, gpu_sssp; print(cupy.__version__, dask.__version__, dask_cuda.__version__, gpu_sssp.__file__)' \
  > "$OUT/versions.txt" 2>&1
echo "[$(( SECONDS - T0 ))s] installed: $(cat "$OUT/versions.txt")"
timeout "${TOTAL_S:-525}" python3 tests/pipeline/cluster_bench.py --out "$OUT" --work /tmp/cluster-bench-work \
  --budget-s "${BUDGET_S:-470}" --step-timeout "${STEP_S:-150}" ${BENCH_ARGS:-}
echo "cluster_bench exit $? after $(( SECONDS - T0 ))s"
ls -la "$OUT"
