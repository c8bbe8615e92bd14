#!/usr/bin/env bash
# Train-step time of the tiny benchmark config (vocab 1000, hidden 128, 2 layers,
# 4 q / 2 kv heads of 32, MLP 384, 4 pairs × 128 tokens): GoMLX pure-Go backend vs the
# same step (forward + backward + AdamW) in plain PyTorch, in the same run.
#   gpuworker/scripts/bench_train.sh            # from the repository root
#   BENCH_06B=1 gpuworker/scripts/bench_train.sh  # also Qwen3-0.6B-shaped scoring (~3 GB RAM)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${CRITIC_PYTHON:-/usr/bin/python3}
go_line=$(go test -run XXX -bench 'BenchmarkTrainStep$' -benchtime 10x ./gpuworker/train | grep '^BenchmarkTrainStep')
echo "$go_line"
go_s=$(awk '{print $3/1e9}' <<<"$go_line")
for th in 1 "$(nproc)"; do
  t=$("$PY" gpuworker/scripts/torch_reference.py bench --steps 10 --threads "$th")
  echo "torch: $t"
  torch_s=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["torch_step_seconds"])' "$t")
  awk -v g="$go_s" -v t="$torch_s" -v th="$th" 'BEGIN{printf "go %.3fs/step, torch(%s threads) %.3fs/step, go/torch = %.1fx\n", g, th, t, g/t}'
done
if [[ -n "${BENCH_06B:-}" ]]; then
  CRITIC_BENCH_06B=1 go test -run XXX -bench 'BenchmarkScore06B$' -benchtime 1x -timeout 60m -v ./gpuworker/train | grep -E 'Benchmark|init|first'
fi
