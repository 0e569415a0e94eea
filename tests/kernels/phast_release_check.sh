#!/usr/bin/env bash
# The GPU figures of the `phast` engine (issue 16) in one call on a one-GPU machine, from the
# repo root with the wheels of ../shared/tools/offline-wheels.sh (+ networkit) in .whl/ and the
# real graphs in shared/data/ (about 8 minutes on an H200):
#   1. tests/kernels/phast_timing.py: NY/FLA/NW kernel timings, single source, all NY sources
#   2. `sssp bench` on NY and FLA: phast beside batched and the CPU anchors (SciPy, NetworKit
#      on all host cores), the same sources, one process
#   3. `sssp study NY --sources all` on one GPU with the default engine (auto -> phast), then
#      with --algorithm batched, CLI wall time measured outside
# Everything lands in $OUT/phast-results.tgz (+ the log).
set -uo pipefail
OUT=${OUT:-$PWD/phast-out}
R=/tmp/phast-results
mkdir -p "$OUT" "$R"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  || echo "wheel install failed"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SSSP_SHARED_DATA=$PWD/shared/data MPLBACKEND=Agg
SSSP="python3 -m gpu_sssp.workflows.cli"
T0=$SECONDS
log() { echo "[$(( SECONDS - T0 ))s] $*" | tee -a "$R/steps.log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$R/gpu.txt"
nproc >> "$R/gpu.txt"

log "timing"
timeout ${TIMING_LIMIT:-200} python3 tests/kernels/phast_timing.py --graphs ${GRAPHS:-NY,FLA,NW} --all-ny \
  --out "$R/phast.jsonl" > "$R/timing.log" 2>&1; log "timing exit $?"

W=/tmp/phast-work; mkdir -p $W
for g in NY FLA; do
  log "ingest $g"
  $SSSP ingest shared/data/road-topology/$g.gr.xz --weights random:1:1000:7 -o $W/$g.parquet >> "$R/ingest.log" 2>&1
done
log "bench"
timeout ${BENCH_LIMIT:-200} $SSSP bench $W/NY.parquet $W/FLA.parquet --algorithms phast,batched \
  --baselines scipy,networkit,networkit-spsp --sources ${BENCH_SOURCES:-256} --out $R/bench --no-plots > "$R/bench.log" 2>&1
log "bench exit $?"

for algo in auto batched; do
  log "study NY all $algo"
  s=$SECONDS
  timeout 150 $SSSP study $W/NY.parquet --sources all --algorithm $algo --gpus 0 --no-dashboard \
    --out $W/study-$algo > "$R/study-$algo.log" 2>&1
  rc=$?; log "study $algo exit $rc, CLI wall $(( SECONDS - s )) s"
  for f in $W/study-$algo/*.json; do cp "$f" "$R/study-$algo-$(basename "$f")"; done
done
ls -la $W >> "$R/steps.log"
tar czf "$OUT/phast-results.tgz" -C /tmp phast-results
cp "$R/steps.log" "$OUT/"
