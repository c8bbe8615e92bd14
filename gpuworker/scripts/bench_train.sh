#!/usr/bin/env bash
# `make bench-train`: train-step time of the tiny benchmark config (vocab 1000, hidden
# 128, 2 layers, 4 q / 2 kv heads of 32, MLP 384, 4 pairs × 128 tokens), forward +
# backward + AdamW, in our GoMLX engine beside the same step in plain PyTorch
# (torch_reference.py bench), in the same run, pinned to the same CPUs with the same
# thread count; then Qwen3-0.6B-shaped scoring of one 1024-token sequence (random
# weights): sequences/s and peak RSS. See gpuworker/scripts/BENCH_TRAIN.md.
#
#   gpuworker/scripts/bench_train.sh                 # from the repository root
#   REPS=7 STEPS=10 gpuworker/scripts/bench_train.sh
#   BENCH_PORTABLE=0  skip the build without GOEXPERIMENT=simd (default: measure it too)
#   BENCH_06B=0       skip the 0.6B scoring run          (default: run it, ~1-3 min)
#
# "default" is the build `make build` makes: GOEXPERIMENT=simd on amd64 (compute's
# AVX-512/AVX2 kernels, chosen at start-up from the CPU). "portable" is a plain
# `go build` without it (compute's scalar kernels).
#
# Each figure is the median over REPS runs of STEPS timed steps (after a warm-up step);
# Go and torch runs alternate so machine noise hits both alike. torch runs in the
# setup torch_env.sh picks (OpenBLAS's OpenMP build, its AVX-512 kernels, threads =
# the run's), and the script prints what that was.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${CRITIC_PYTHON:-/usr/bin/python3}
. gpuworker/scripts/torch_env.sh
REPS=${REPS:-5}
STEPS=${STEPS:-10}
NCPU=$(nproc)
ALLCPUS="0-$((NCPU - 1))"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "building test binaries..."
defexp=${GOEXPERIMENT-}
[[ $(go env GOARCH) == amd64 && "${CRITIC_SIMD:-1}" != 0 && -z ${GOEXPERIMENT+x} ]] && defexp=simd
GOEXPERIMENT=$defexp go test -c -o "$tmp/train.test" ./gpuworker/train
builds=(default)
if [[ "${BENCH_PORTABLE:-1}" != 0 && -n $defexp ]]; then
  GOEXPERIMENT= go test -c -o "$tmp/train_portable.test" ./gpuworker/train
  builds+=(portable)
fi
echo "default build: GOEXPERIMENT=${defexp:-<none>}; load $(cut -d' ' -f1-3 /proc/loadavg) on $NCPU CPUs"

median() { sort -g | awk '{a[NR]=$1} END{if(NR%2)print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

go_step() { # build cpus procs -> seconds/step
  local bin=$tmp/train.test
  [[ $1 == portable ]] && bin=$tmp/train_portable.test
  (cd gpuworker/train && GOMAXPROCS=$3 taskset -c "$2" "$bin" -test.run XXX \
    -test.bench 'BenchmarkTrainStep$' -test.benchtime "${STEPS}x") |
    awk '{for (i = 2; i <= NF; i++) if ($i == "ns/op") print $(i - 1) / 1e9}' # the figures may follow the backend's own start-up line
}
torch_step() { # cpus threads -> seconds/step
  torch_run "$1" "$2" gpuworker/scripts/torch_reference.py bench --steps "$STEPS" --threads "$2" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["torch_step_seconds"])'
}

torch_env_init
echo "tiny config train step, median of $REPS runs × $STEPS steps (go test -bench BenchmarkTrainStep vs torch_reference.py bench)"
declare -A best_g=()
best_t=
for cfg in "1:${BENCH_CPU:-0}" "$NCPU:$ALLCPUS"; do
  n=${cfg%%:*} cpus=${cfg#*:}
  declare -A runs=()
  for _ in $(seq "$REPS"); do
    for b in "${builds[@]}"; do runs[$b]+="$(go_step "$b" "$cpus" "$n") "; done
    runs[torch]+="$(torch_step "$cpus" "$n") "
  done
  t=$(tr ' ' '\n' <<<"${runs[torch]}" | grep . | median)
  printf '  taskset -c %-4s threads %d: torch %.3f s/step  [runs: %s]\n' "$cpus" "$n" "$t" "${runs[torch]% }"
  for b in "${builds[@]}"; do
    g=$(tr ' ' '\n' <<<"${runs[$b]}" | grep . | median)
    printf '  taskset -c %-4s threads %d: go (%s build) %.3f s/step  ratio go/torch = %.2fx  [runs: %s]\n' \
      "$cpus" "$n" "$b" "$g" "$(awk -v g="$g" -v t="$t" 'BEGIN{print g/t}')" "${runs[$b]% }"
  done
  best_t=${best_t:-$t}
  for b in "${builds[@]}"; do
    g=$(tr ' ' '\n' <<<"${runs[$b]}" | grep . | median)
    if [[ -z "${best_g[$b]:-}" ]] || awk -v a="$g" -v b="${best_g[$b]}" 'BEGIN{exit !(a<b)}'; then best_g[$b]=$g; fi
  done
  if awk -v a="$t" -v b="$best_t" 'BEGIN{exit !(a<b)}'; then best_t=$t; fi
  unset runs
done
for b in "${builds[@]}"; do
  printf '  best of each: go (%s build) %.3f s/step vs torch %.3f s/step: ratio %.2fx\n' "$b" "${best_g[$b]}" "$best_t" \
    "$(awk -v g="${best_g[$b]}" -v t="$best_t" 'BEGIN{print g/t}')"
done

if [[ "${BENCH_06B:-1}" != 0 ]]; then
  b=default
  bin=$tmp/train.test
  echo "Qwen3-0.6B-shaped random model, one 1024-token sequence ($b build, GOMAXPROCS=$NCPU, 1 timed call after compile+first call):"
  (cd gpuworker/train && CRITIC_BENCH_06B=1 GOMAXPROCS=$NCPU taskset -c "$ALLCPUS" "$bin" -test.run XXX \
    -test.bench 'BenchmarkScore06B$' -test.benchtime 1x -test.timeout 60m -test.v) |
    grep -E '^Benchmark|init|first' | sed 's/^/  /'
fi
