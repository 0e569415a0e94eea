#!/usr/bin/env bash
# session 13: pytest -m gpu, then the NY bench with the NetworKit anchors (one H200)
set -uo pipefail
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SSSP_SHARED_DATA=$PWD/shared/data MPLBACKEND=Agg
nvidia-smi -L; nproc; lscpu | grep "Model name"
git log --oneline -1 2>/dev/null
timeout ${TEST_LIMIT:-470} python3 -m pytest -m gpu -q -p no:cacheprovider -rf tests > $OUT/pytest-gpu.log 2>&1
echo "pytest exit $?" >> $OUT/pytest-gpu.log
tail -5 $OUT/pytest-gpu.log
echo "[$(( SECONDS - T0 ))s] tests done"
left=$(( 585 - (SECONDS - T0) ))
if [ "$left" -gt 100 ]; then
  mkdir -p /tmp/b
  python3 -m gpu_sssp.workflows.cli ingest shared/data/road-topology/NY.gr.xz -o /tmp/b/NY.parquet --weights random:1:1000:7 > $OUT/ingest.log 2>&1
  timeout $(( left - 15 )) python3 -m gpu_sssp.workflows.cli bench /tmp/b/NY.parquet --algorithms phast,batched \
    --baselines scipy,networkit,networkit-spsp --sources 256 --out $OUT/bench-NY > $OUT/bench.log 2>&1
  echo "bench exit $?" >> $OUT/bench.log
  tail -30 $OUT/bench.log
fi
echo "[$(( SECONDS - T0 ))s] all done"
