#!/usr/bin/env bash
# `make bench-score-engine`: reward scoring through a Qwen3-0.6B-shaped random model
# (hidden 1024, 28 layers, 16 q / 8 kv heads of 128, MLP 3072, vocab 151936), in our
# GoMLX engine (BenchmarkScoreEngine: length-bucketed batches, model.ScoreBucketed)
# beside plain PyTorch's forward (torch_reference.py score-bench) on the very same
# batches, same CPUs and thread count, in the same run. Two workloads: one batch of
# 8 × 1024 tokens, and 32 texts of mixed length (log-uniform 64–1024). Prints
# sequences/s, peak RSS and the ratios go/torch (time) and go/torch (RSS).
#
#   gpuworker/scripts/bench_score_engine.sh            # from the repository root
#   BENCH_LAYERS=2    keep 2 of the 28 layers (minutes instead of ~an hour on 2 cores)
#   CRITIC_BENCH_SCORE_ONLY=8x1024   run only that scenario (or mix64-1024)
#   BENCH_SIMD=0      build Go without GOEXPERIMENT=simd (default: as `make build`, i.e.
#                     GOEXPERIMENT=simd on amd64: compute's AVX-512/AVX2 kernels)
#
# Each side runs every scenario once untimed (Go: graph compile; torch: allocator warm-up)
# and once timed. Go runs first, then torch, so their peak RSS do not add up. torch runs
# in the setup torch_env.sh picks (OpenBLAS's OpenMP build, its AVX-512 kernels).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${CRITIC_PYTHON:-/usr/bin/python3}
. gpuworker/scripts/torch_env.sh
NCPU=$(nproc)
ALLCPUS="0-$((NCPU - 1))"
LAYERS=${BENCH_LAYERS:-28}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

exp=${GOEXPERIMENT-}
[[ $(go env GOARCH) == amd64 && "${CRITIC_SIMD:-1}" != 0 && -z ${GOEXPERIMENT+x} ]] && exp=simd
[[ "${BENCH_SIMD:-1}" == 0 ]] && exp=
echo "building the test binary (GOEXPERIMENT=${exp:-<none>})..."
GOEXPERIMENT=$exp go test -c -o "$tmp/model.test" ./gpuworker/model
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $NCPU CPUs"
echo "go: Qwen3-0.6B-shaped, $LAYERS layers, GOMAXPROCS=$NCPU..."
(cd gpuworker/model && CRITIC_BENCH_SCORE=1 CRITIC_BENCH_SCORE_LAYERS=$LAYERS CRITIC_BENCH_SCORE_OUT=$tmp/plan.json \
  GOMAXPROCS=$NCPU taskset -c "$ALLCPUS" "$tmp/model.test" -test.run XXX -test.bench 'BenchmarkScoreEngine$' \
  -test.benchtime 1x -test.timeout 180m -test.v) | grep -E '^Benchmark|seq/s|first' | sed 's/^/  /'
torch_env_init
echo "torch: $NCPU threads, same batches..."
torch_run "$ALLCPUS" "$NCPU" gpuworker/scripts/torch_reference.py score-bench --plan "$tmp/plan.json" \
  --threads "$NCPU" >"$tmp/torch.json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$tmp/plan.json" "$tmp/torch.json" <<'PYEOF'
import json, sys
g, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for s in g["scenarios"]:
    n, gs, ts = len(s["seqs"]), s["go_seconds"], t["scenarios"][s["name"]]
    print(f"  {s['name']:>11}: {n} texts in {len(s['plan'])} batches  go {n/gs:.4f} seq/s ({gs:.2f} s)  "
          f"torch {n/ts:.4f} seq/s ({ts:.2f} s)  ratio go/torch time = {gs/ts:.2f}x")
print(f"  peak RSS: go {g['go_peak_rss_gib']:.2f} GiB, torch {t['torch_peak_rss_gib']:.2f} GiB, "
      f"ratio {g['go_peak_rss_gib']/t['torch_peak_rss_gib']:.2f}x")
PYEOF
