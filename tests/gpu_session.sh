#!/usr/bin/env bash
# Every GPU check of a release in one call on a 2-GPU machine (no network needed):
#   GPU 1: the benchmark behind BENCHMARKS.md (tests/pipeline/gpu_bench_check.sh)
#   GPU 0: `pytest -m gpu`, then the single-source kernel timings (hbf ablation)
#   both : the study on 1 and 2 GPUs (tests/pipeline/gpu_study_check.py)
# Results are packed into $OUT/results.tgz (plus the logs beside it).  STUDY_ALL=1 adds the
# all-sources NY study (with where its time outside kernels went) to the study step;
# TIMING_ARGS passes options to gpu_timing.py (e.g. "--extra --methods hbf,locality").
# Run from the repository root with the wheels of `../shared/tools/offline-wheels.sh`
# (plus networkit / rustworkx) in .whl/ and the real graphs in shared/data/.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
R=/tmp/gpu-results
mkdir -p "$OUT" "$R"
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || echo "wheel install failed" >&2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SSSP_SHARED_DATA=$PWD/shared/data MPLBACKEND=Agg
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
python3 -c 'import cupy, dask, distributed, dask_cuda; print(cupy.__version__, dask.__version__, dask_cuda.__version__)' > "$R/versions.txt" 2>&1

( export CUDA_VISIBLE_DEVICES=1 OUT=$R/bench
  timeout "${BENCH_LIMIT:-380}" bash tests/pipeline/gpu_bench_check.sh > "$R/bench-run.log" 2>&1
  echo "bench exit $?" >> "$R/bench-run.log" ) &
BENCH=$!

( export CUDA_VISIBLE_DEVICES=0
  timeout "${TEST_LIMIT:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider -rf tests > "$R/pytest-gpu.log" 2>&1
  echo "pytest exit $?" >> "$R/pytest-gpu.log"
  left=$(( ${KERNEL_END:-370} - (SECONDS - T0) ))
  if [ "$left" -gt 40 ]; then
    timeout "$left" python3 tests/kernels/gpu_timing.py --sources 100 --budget-s $(( left - 20 )) \
      ${TIMING_ARGS:-} --out "$R/hbf-timing.md" > "$R/hbf-timing.log" 2>&1
    echo "timing exit $?" >> "$R/hbf-timing.log"
  fi ) &
TESTS=$!
wait $TESTS
wait $BENCH
# `timeout` stops the benchmark script but not the `sssp bench` it started; a leftover
# would share GPU 1 with the study below (this spoiled a 2-GPU measurement once)
pkill -9 -f "workflows.cli" 2>/dev/null
sleep 2
echo "[$(( SECONDS - T0 ))s] bench and tests done" | tee -a "$R/session.log"

left=$(( ${TOTAL_END:-575} - (SECONDS - T0) ))
if [ "$left" -gt 60 ]; then
  timeout "$left" python3 tests/pipeline/gpu_study_check.py --rome data/rome99.gr \
    --ny shared/data/road-topology/NY.gr.xz --batch-size "${STUDY_BATCH:-512}" --gpus 0,1 ${STUDY_ALL:+--ny-all} \
    --out "$R/study.json" > "$R/study.log" 2>&1
  echo "study exit $?" >> "$R/study.log"
fi
echo "[$(( SECONDS - T0 ))s] all done" | tee -a "$R/session.log"
tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null
cp "$R"/*.log "$OUT"/ 2>/dev/null
ls -la "$OUT"
