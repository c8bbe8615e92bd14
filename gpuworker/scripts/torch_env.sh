# Sourced by bench_train.sh and bench_score_engine.sh: runs the PyTorch reference in the
# fastest honest setup this machine offers, so a slow torch does not flatter Go. Measured
# on the 2-core AVX-512 EPYC (BENCH_TRAIN.md, fourth pass), tiny train step:
#
#   - Debian's torch calls sgemm through libblas.so.3. With libopenblas0-pthread (the
#     alternative apt picks) at 2 threads, OpenBLAS's own pthreads spin against torch's
#     OpenMP threads: 0.10–0.18 s/step, worse than 1 thread. libopenblas0-openmp shares
#     torch's libgomp pool: 0.027–0.034 s/step. So torch loads the OpenMP build when it
#     is installed (LD_LIBRARY_PATH; the system's alternative is left alone).
#   - This machine's environment exports OPENBLAS_CORETYPE=Haswell, which holds OpenBLAS
#     to its AVX2 kernels; left alone it detects Cooperlake (AVX-512) on this EPYC, and
#     AVX-512 kernels are 0.056 → 0.042 s/step at 1 thread. So an inherited
#     OPENBLAS_CORETYPE is dropped (and said so); TORCH_OPENBLAS_CORETYPE forces a core.
#   - OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set to the thread count of each run.
#
# Knobs: TORCH_BLAS=openmp|pthread|serial|system (default: openmp if installed, else
# system), TORCH_OPENBLAS_CORETYPE (default: OpenBLAS's own detection).
#
#   torch_env_init            # once: decides, prints one line saying what torch uses
#   torch_run CPUS THREADS python-args...

torch_env_init() {
  local libdir=/usr/lib/x86_64-linux-gnu want=${TORCH_BLAS:-}
  TORCH_LD=
  if [[ -z $want ]]; then
    want=system
    [[ -e $libdir/openblas-openmp/libblas.so.3 ]] && want=openmp
  fi
  if [[ $want != system ]]; then
    if [[ ! -e $libdir/openblas-$want/libblas.so.3 ]]; then
      echo "TORCH_BLAS=$want: $libdir/openblas-$want is not installed (apt-get install libopenblas0-$want)" >&2
      return 1
    fi
    TORCH_LD=$libdir/openblas-$want${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  TORCH_CORE=${TORCH_OPENBLAS_CORETYPE:-}
  local probe='import torch; a=torch.ones(8,8); a@a; print(";".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l})))'
  local detected libs how=TORCH_OPENBLAS_CORETYPE
  if [[ -z $TORCH_CORE ]]; then
    how="OpenBLAS's own detection"
    [[ -n ${OPENBLAS_CORETYPE:-} ]] && how+="; the inherited OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE is ignored"
    detected=$(env -u OPENBLAS_CORETYPE ${TORCH_LD:+LD_LIBRARY_PATH=$TORCH_LD} OPENBLAS_VERBOSE=2 "$PY" -c "$probe" 2>&1 >/dev/null |
      sed -n 's/^Core: //p' | head -1)
    TORCH_CORE=$detected
  fi
  libs=$(env -u OPENBLAS_CORETYPE ${TORCH_LD:+LD_LIBRARY_PATH=$TORCH_LD} ${TORCH_CORE:+OPENBLAS_CORETYPE=$TORCH_CORE} "$PY" -c "$probe" 2>/dev/null || true)
  local shown=${libs:-?}
  [[ $libs == *libopenblas* ]] && shown=$(tr ';' '\n' <<<"$libs" | grep libopenblas | head -1)
  echo "torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null): BLAS $shown; OpenBLAS core ${TORCH_CORE:-?} ($how); OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = threads of each run"
  case "$libs" in
  *openblas*) ;;
  *)
    # python3-torch alone pulls in the reference BLAS (~10× slower than OpenBLAS here).
    echo "WARNING: torch does not run on OpenBLAS: the torch figures are not a fair reference (apt-get install libopenblas0-openmp)" ;;
  esac
  case "$libs" in
  *openblas-pthread*)
    echo "WARNING: OpenBLAS's pthread build spins against torch's OpenMP threads at > 1 thread (apt-get install libopenblas0-openmp)" ;;
  esac
}

torch_run() { # cpus threads python-args...
  local cpus=$1 n=$2
  shift 2
  env -u OPENBLAS_CORETYPE ${TORCH_LD:+LD_LIBRARY_PATH=$TORCH_LD} ${TORCH_CORE:+OPENBLAS_CORETYPE=$TORCH_CORE} \
    OMP_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n" taskset -c "$cpus" "$PY" "$@"
}
