#!/usr/bin/env bash
# GPU check for the reward-model engine on XLA/PJRT. For a machine with an NVIDIA GPU,
# Go, and a Python that has JAX's CUDA PJRT plugin (pip jax-cuda13-pjrt, with its nvidia-*
# wheels), torch and transformers. It cannot run on the CPU-only dev machines.
#
#   gpuworker/scripts/gpu_check.sh                    # from anywhere in the repository
#   CRITIC_PYTHON=/venv/bin/python STEPS=10 OUT_DIR=/tmp/gc gpuworker/scripts/gpu_check.sh
#   PJRT_PLUGIN=/path/xla_cuda_plugin.so  use this plugin instead of searching the Python
#   PHASE_TIMEOUT=600   seconds allowed to each phase;  SKIP_06B=1  skip the 0.6B timing
#   BIN_DIR=DIR         use prebuilt critic, gpustep and model.test (no Go toolchain needed):
#     export GOEXPERIMENT=simd  # as `make build` on amd64: the pure-Go side runs compute's AVX-512/AVX2 kernels
#     go build -o DIR/critic ./cmd/critic && go build -o DIR/gpustep ./gpuworker/scripts/gpustep &&
#     go test -c -o DIR/model.test ./gpuworker/model
#
# Phases (each prints its figures; a failed phase is reported and the rest still run):
#  1. find the plugin .so inside the jax install and point the loader at its NVIDIA libs
#  2. TestXLAMatchesGo: tiny-model rewards through XLA vs the pure-Go backend (1e-4, notf32)
#  3. `critic model train` of a tiny model with GOMLX_BACKEND=xla:<plugin> (and the same
#     run on the pure-Go backend, to compare final loss / eval accuracy / device)
#  4. transformers_golden.py: writes the transformers golden file, then --check against
#     the committed torch golden
#  5. one Qwen3-0.6B-shaped training step (random weights, 4 pairs × 1024 tokens, AdamW):
#     our engine (gpustep, XLA) beside PyTorch/transformers (transformers_step.py), same GPU
# Outputs (JSON and logs) go to OUT_DIR (default $OUT if set, else ./gpu_check_out).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${CRITIC_PYTHON:-python3}
T=${PHASE_TIMEOUT:-600}
STEPS=${STEPS:-5}
OUT_DIR=${OUT_DIR:-${OUT:-$PWD/gpu_check_out}}
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -a summary=()
log() { printf '\n=== %s\n' "$*"; }
phase() { # name cmd... : runs cmd under the phase timeout, records ok/FAIL, never exits
  local name=$1 rc=0
  shift
  timeout --kill-after=30 "$T" "$@" || rc=$?
  if ((rc == 0)); then
    summary+=("ok    $name")
  elif ((rc == 124 || rc == 137)); then
    summary+=("FAIL  $name (timed out after ${T}s)")
  else
    summary+=("FAIL  $name (rc=$rc)")
  fi
  return 0
}

log "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"
go version 2>/dev/null || echo "no go toolchain (BIN_DIR must hold prebuilt binaries)"
"$PY" -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "| torch", torch.__version__,
  "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "| transformers", transformers.__version__)' ||
  echo "warning: $PY lacks torch or transformers" >&2

log "1. PJRT CUDA plugin"
if [[ -z ${PJRT_PLUGIN:-} ]]; then
  # The plugin package (jax_plugins.xla_cuda13) is located without importing it or jax.
  PJRT_PLUGIN=$("$PY" - <<'EOF' || true
import glob, importlib.util, os, site, sys
cands = []
for mod in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
    try:
        spec = importlib.util.find_spec(mod)
    except Exception:
        spec = None
    for d in (spec.submodule_search_locations or []) if spec else []:
        cands.append(os.path.join(d, "xla_cuda_plugin.so"))
for d in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    cands += sorted(glob.glob(os.path.join(d, "jax_plugins", "xla_cuda*", "*.so")))
print(next((os.path.realpath(c) for c in cands if os.path.isfile(c)), ""))
EOF
  )
fi
if [[ -z $PJRT_PLUGIN || ! -f $PJRT_PLUGIN ]]; then
  echo "no PJRT CUDA plugin found in $PY's packages (pip install jax-cuda13-pjrt, or set PJRT_PLUGIN)" >&2
  exit 1
fi
echo "plugin: $PJRT_PLUGIN"
# The plugin finds the NVIDIA libraries (cuBLAS, cuDNN, ...) of the nvidia-* wheels via
# RPATH $ORIGIN/../../nvidia; put them on LD_LIBRARY_PATH too, and give XLA the CUDA data
# dir (ptxas, libdevice). go-xla's own check looks for ../nvidia (its installer's layout)
# and would only warn here, so it is switched off.
pyenv=(env LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}") # python phases keep the caller's; torch brings its own
site_dir=$(dirname "$(dirname "$(dirname "$PJRT_PLUGIN")")")
if [[ -d $site_dir/nvidia ]]; then
  libs=$(find "$site_dir/nvidia" -maxdepth 3 -type d -name lib | sort | paste -sd: -)
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for d in "$site_dir/nvidia/cu13" "$site_dir/nvidia/cuda_nvcc"; do
    if [[ -d $d ]]; then
      export XLA_FLAGS="--xla_gpu_cuda_data_dir=$d${XLA_FLAGS:+ $XLA_FLAGS}"
      export PATH="$d/bin:$PATH"
      break
    fi
  done
  echo "nvidia wheels: $(ls "$site_dir/nvidia" | tr '\n' ' ')"
else
  echo "warning: no $site_dir/nvidia: the plugin must find the CUDA libraries elsewhere" >&2
fi
export GOPJRT_CUDA_CHECKS=0
echo "XLA_FLAGS=${XLA_FLAGS:-}"
missing=$(ldd "$PJRT_PLUGIN" 2>/dev/null | grep 'not found' || true)
[[ -z $missing ]] || echo "ldd: unresolved libraries:"$'\n'"$missing"
XLA="xla:$PJRT_PLUGIN"

if [[ -n ${BIN_DIR:-} ]]; then
  log "prebuilt binaries from $BIN_DIR"
  cp "$BIN_DIR/critic" "$BIN_DIR/gpustep" "$BIN_DIR/model.test" "$work/"
else
  # Build as `make build` does: GOEXPERIMENT=simd on amd64, so the pure-Go references
  # (phases 2 and 3) run the kernels users get; CRITIC_SIMD=0 builds without.
  if [[ $(go env GOARCH) == amd64 && ${CRITIC_SIMD:-1} != 0 && -z ${GOEXPERIMENT+x} ]]; then export GOEXPERIMENT=simd; fi
  log "building (GOEXPERIMENT=${GOEXPERIMENT:-<none>})"
  go build -o "$work/critic" ./cmd/critic
  go build -o "$work/gpustep" ./gpuworker/scripts/gpustep
  go test -c -o "$work/model.test" ./gpuworker/model
fi

log "2. tiny model: XLA rewards vs pure-Go rewards (TestXLAMatchesGo)"
phase "xla-vs-go rewards (1e-4)" env CRITIC_XLA_PLUGIN="$PJRT_PLUGIN,notf32" \
  "$work/model.test" -test.run '^TestXLAMatchesGo$' -test.v -test.count=1 >"$OUT_DIR/xla_parity.log" 2>&1
grep -v '^W[0-9]' "$OUT_DIR/xla_parity.log" | tail -n 20

log "3. critic model train, tiny model, GOMLX_BACKEND=$XLA"
GOMLX_BACKEND=go "$work/critic" model init --arch qwen3 --hidden 64 --layers 2 --heads 4 --kv-heads 2 \
  --head-dim 16 --intermediate 128 --tokenizer gpuworker/testdata/tinytok --out "$work/tiny-base"
for i in $(seq 0 39); do
  printf '{"chosen":"the refund for order %d went through","rejected":"no %d","trace_id":"t%d","granularity":"trace"}\n' \
    "$i" "$i" $((i % 10))
done >"$work/pairs.jsonl"
tiny_train() { # backend outdir
  local rc=0
  GOMLX_BACKEND=$1 "$work/critic" model train --pairs "$work/pairs.jsonl" --base "$work/tiny-base" \
    --out "$2" --epochs 3 >"$2.stdout" 2>"$2.stderr" || rc=$?
  grep -v '^W[0-9]' "$2.stderr" | tail -n 3
  ((rc == 0)) || return "$rc"
  cp "$2/result.json" "$OUT_DIR/$(basename "$2").result.json"
}
rm -f "$OUT_DIR"/tiny-*.result.json
export -f tiny_train
export work OUT_DIR
phase "critic model train (xla)" bash -c 'tiny_train "$@"' _ "$XLA" "$work/tiny-xla"
phase "critic model train (go)" bash -c 'tiny_train "$@"' _ go "$work/tiny-go"
"$PY" - "$OUT_DIR" <<'EOF' || true
import json, os, sys
r = {}
for k in ("xla", "go"):
    p = os.path.join(sys.argv[1], f"tiny-{k}.result.json")
    r[k] = json.load(open(p))["metrics"] if os.path.exists(p) else None
    print(k, json.dumps(r[k]))
if r["xla"] and r["go"]:
    print("device(xla)=%s  |final_loss xla-go|=%.2e  eval_accuracy xla=%s go=%s" % (r["xla"]["device"],
          abs(r["xla"]["final_loss"] - r["go"]["final_loss"]), r["xla"]["eval_accuracy"], r["go"]["eval_accuracy"]))
EOF

log "4. transformers golden (transformers_golden.py)"
golden_model=gpuworker/testdata/golden/tiny-qwen3
golden=$OUT_DIR/tiny-qwen3.transformers.golden.json
"${pyenv[@]}" "$PY" -c 'import json, sys; sys.path.insert(0, "gpuworker/scripts"); import transformers_golden as g
print(json.dumps(g.golden_request(sys.argv[1])))' "$golden_model" >"$work/golden_req.json" || true
phase "transformers golden file" "${pyenv[@]}" bash -c '"$1" gpuworker/scripts/transformers_golden.py --device cuda \
  <"$2" >"$3"' _ "$PY" "$work/golden_req.json" "$golden"
[[ ! -s $golden ]] || "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))
print("transformers (cuda): rewards_chosen", d["rewards_chosen"], "rewards_rejected", d["rewards_rejected"],
      "loss", d["loss"], "->", sys.argv[1])' "$golden" || true
phase "transformers vs committed golden (1e-4)" "${pyenv[@]}" "$PY" gpuworker/scripts/transformers_golden.py \
  --device cuda --check gpuworker/testdata/golden/tiny-qwen3.golden.json --model "$golden_model"

if [[ ${SKIP_06B:-0} != 1 ]]; then
  log "5. Qwen3-0.6B-shaped train step, 4 pairs x 1024 tokens, same GPU"
  phase "0.6B step, our engine (xla)" bash -c 'GOMLX_BACKEND=$1 "$2" -work "$3" -steps "$4" >"$5"' _ \
    "$XLA" "$work/gpustep" "$work/step" "$STEPS" "$OUT_DIR/gomlx_step.json"
  rm -rf "$work/step"
  phase "0.6B step, pytorch/transformers" "${pyenv[@]}" bash -c '"$1" gpuworker/scripts/transformers_step.py \
    --device cuda --steps "$2" >"$3"' _ "$PY" "$STEPS" "$OUT_DIR/torch_step.json"
  "$PY" - "$OUT_DIR" <<'EOF' || true
import json, os, sys
res = {}
for k in ("gomlx", "torch"):
    p = os.path.join(sys.argv[1], f"{k}_step.json")
    res[k] = json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
    print(k, json.dumps(res[k]))
if all(res.values()):
    g, t = res["gomlx"]["step_seconds_median"], res["torch"]["step_seconds_median"]
    print(f"step seconds (median): ours {g:.3f}  torch {t:.3f}  ratio ours/torch {g / t:.2f}")
EOF
fi

log "summary"
printf '%s\n' "${summary[@]}"
printf 'outputs in %s\n' "$OUT_DIR"
[[ ! " ${summary[*]} " =~ FAIL ]]
