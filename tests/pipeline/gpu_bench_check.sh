#!/usr/bin/env bash
# The GPU benchmark behind BENCHMARKS.md (BENCHMARKS.md explains it).  From the repo root:
#
#   bash tests/pipeline/gpu_bench_check.sh            # everything, about 6-7 minutes on an H100
#
# It needs no network: networkit/rustworkx come from .whl/ (carried with the tree).
# Results go to $OUT (the device tool's output folder; default ./bench-gpu):
#   $OUT/<phase>/rows.parquet + summary.md + PNGs, $OUT/all/ (every phase merged),
#   $OUT/BENCHMARKS-tables.md (= all/summary.md), $OUT/bench.log.
# Knobs (environment): PHASES ("warm road small rmat grid"; warm = compile every kernel once
#   on a tiny graph so CuPy's on-disk cache makes later phases' warm-up cheap), RMAT_SCALES ("18 19 20 21 22"),
#   EF (R-MAT edge factor, 16), GRID_SIDE (2048 -> 2^22 vertices), ALGOS (gpu),
#   ROAD_SOURCES (16), SMALL_SOURCES (32), BIG_SOURCES (3), SMALL_LIMIT (60 s per small graph),
#   SMALL_TIMEOUT (200), BIG_LIMIT (40 s per big graph),
#   RMAT_TIMEOUT (300), GRID_TIMEOUT (120), WORK (scratch, /tmp/sssp-bench),
#   PY (python3).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/bench-gpu}
WORK=${WORK:-/tmp/sssp-bench}
PHASES=${PHASES:-"warm road small rmat grid"}
RMAT_SCALES=${RMAT_SCALES:-"18 19 20 21 22"}
EF=${EF:-16}
GRID_SIDE=${GRID_SIDE:-2048}
ALGOS=${ALGOS:-gpu}
PY=${PY:-python3}
ROAD_SOURCES=${ROAD_SOURCES:-16}
SMALL_SOURCES=${SMALL_SOURCES:-32}
BIG_SOURCES=${BIG_SOURCES:-3}
SMALL_LIMIT=${SMALL_LIMIT:-60}      # seconds per small graph (25 cut queue-bf, delta and the
SMALL_TIMEOUT=${SMALL_TIMEOUT:-200} #   ablation on rgg_n_2_15 in the 2026-11-21 run)
BIG_LIMIT=${BIG_LIMIT:-40}          # seconds per RMAT / grid graph (methods after it are cut)
RMAT_TIMEOUT=${RMAT_TIMEOUT:-300}   # seconds for the whole rmat phase
GRID_TIMEOUT=${GRID_TIMEOUT:-120}
mkdir -p "$OUT" "$WORK"
T0=$SECONDS
log() { echo "[$(( SECONDS - T0 ))s] $*" | tee -a "$OUT/bench.log"; }

export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1 MPLBACKEND=Agg
wheels=$(ls .whl/networkit-*.whl .whl/rustworkx-*.whl 2>/dev/null)
if [ -n "$wheels" ] && ! $PY -c 'import networkit, rustworkx' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site $wheels && export PYTHONPATH=$ROOT:/tmp/site || log "wheel install failed"
fi
$PY -c 'import zstandard' 2>/dev/null || {
  z=$(ls .whl/zstandard-*.whl 2>/dev/null) && $PY -m pip install -q --no-index --no-deps \
    --no-compile --no-cache-dir --target /tmp/site $z && export PYTHONPATH=$ROOT:/tmp/site; }
SSSP="$PY -m workflows.cli"

# an input by name: data/ (the lead's copies), then shared/data, then ../shared/data
find_input() {
  for d in data data/road data/metis data/mtx shared/data/road-topology shared/data/metis shared/data/mtx \
           ../shared/data/road-topology ../shared/data/metis ../shared/data/mtx; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  log "missing input $1"; return 1
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/bench.log"
$PY -c 'import kernels, sys; print("python", sys.version.split()[0], "devices", kernels.device_count(),
"gpu methods", kernels.available_methods("gpu"))' 2>&1 | tee -a "$OUT/bench.log"

# common settings: H-BF's protocol (random sources reaching >= 1e5 vertices, lowered on small
# graphs), one timed run per source after one warm-up call, slow methods (warm-up over 2 s,
# e.g. a GPU Dijkstra with one launch per settled vertex) timed on 2 sources only, and a
# time limit per graph so the whole run stays inside its budget
COMMON="--algorithms $ALGOS --seed 7 --runs 1 --warmup 1 --slow-ms 2000 --slow-sources 2"

bench() {  # bench PHASE TIMEOUT ARGS...
  local phase=$1 limit=$2; shift 2
  log "bench $phase: $*"
  timeout "$limit" $SSSP bench "$@" $COMMON --out "$OUT/$phase" >"$OUT/$phase.out" 2>&1
  log "bench $phase: exit $? ($(tail -1 "$OUT/$phase.out"))"
}

for phase in $PHASES; do
  case $phase in
  warm)
    [ -e "$WORK/warm.parquet" ] || $SSSP generate rmat --scale 12 --seed 1 --weights 1:1000 -o "$WORK/warm.parquet" -q
    log "bench warm (compiles kernels; rows not kept)"
    timeout 120 $SSSP bench "$WORK/warm.parquet" --ablation hbf --sources 2 --min-component 1 --baselines "" \
      $COMMON --no-plots --out "$WORK/warm-out" >"$OUT/warm.out" 2>&1
    log "bench warm: exit $?"
    ;;
  road)
    args=()
    for g in NY BAY COL; do
      f=$(find_input $g.gr.xz) || continue
      [ -e "$WORK/$g.parquet" ] || $SSSP ingest "$f" -o "$WORK/$g.parquet" --weights random:1:1000:7 -q
      args+=("$WORK/$g.parquet")
    done
    log "road graphs ready"
    bench road 200 "${args[@]}" --ablation hbf,locality --sources "$ROAD_SOURCES" --min-component 100000 \
      --graph-time-limit 45
    ;;
  small)
    args=()
    if f=$(find_input delaunay_n15.graph); then
      [ -e "$WORK/delaunay_n15.parquet" ] || $SSSP ingest "$f" -o "$WORK/delaunay_n15.parquet" --weights random:1:1000:7 -q
      args+=("$WORK/delaunay_n15.parquet"); fi
    if f=$(find_input rgg_n_2_15_s0.graph); then
      [ -e "$WORK/rgg_n_2_15.parquet" ] || $SSSP ingest "$f" -o "$WORK/rgg_n_2_15.parquet" --weights random:1:1000:7 -q
      args+=("$WORK/rgg_n_2_15.parquet"); fi
    if f=$(find_input Lederberg.tar.gz); then
      [ -e "$WORK/Lederberg.parquet" ] || $SSSP ingest "$f" -o "$WORK/Lederberg.parquet" -q
      args+=("$WORK/Lederberg.parquet"); fi
    log "small graphs ready"
    bench small "$SMALL_TIMEOUT" "${args[@]}" --ablation hbf --sources "$SMALL_SOURCES" --min-component 100000 \
      --graph-time-limit "$SMALL_LIMIT"
    ;;
  rmat)
    args=()
    for s in $RMAT_SCALES; do
      [ -e "$WORK/rmat$s.parquet" ] || $SSSP generate rmat --scale "$s" --edge-factor "$EF" --seed 7 \
        --weights 1:1000 -o "$WORK/rmat$s.parquet" -q
      args+=("$WORK/rmat$s.parquet")
    done
    log "rmat graphs ready"
    bench rmat "$RMAT_TIMEOUT" "${args[@]}" --ablation hbf --sources "$BIG_SOURCES" --min-component 100000 \
      --baselines scipy,networkit,networkit-spsp,rustworkx --baseline-max-arcs 5000000 --graph-time-limit "$BIG_LIMIT"
    ;;
  grid)
    [ -e "$WORK/grid22.parquet" ] || $SSSP generate grid --rows "$GRID_SIDE" --cols "$GRID_SIDE" --seed 7 \
      --weights 1:1000 -o "$WORK/grid22.parquet" -q
    log "grid ready"
    bench grid "$GRID_TIMEOUT" "$WORK/grid22.parquet" --sources "$BIG_SOURCES" --min-component 100000 \
      --baseline-max-arcs 5000000 --graph-time-limit "$BIG_LIMIT"
    ;;
  *) log "unknown phase $phase" ;;
  esac
done

dirs=()
for phase in $PHASES; do [ "$phase" != warm ] && [ -e "$OUT/$phase/rows.parquet" ] && dirs+=("$OUT/$phase"); done
if [ ${#dirs[@]} -gt 0 ]; then
  $SSSP bench --from-rows "${dirs[@]}" --out "$OUT/all" >"$OUT/all.out" 2>&1
  log "merged: exit $? (1 = some answer was wrong; see the Correctness section)"
  cp "$OUT/all/summary.md" "$OUT/BENCHMARKS-tables.md"
fi
log "done in $(( SECONDS - T0 )) s"
