#!/bin/bash
# One H200 call: cudnn GPU tests, cut-down audits with cudnn recorded, a bench against cudnn.
S=build-cudnn-stage
R=$OUT/r; mkdir -p $R
CUDNN_LIB=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export NVDET_CUDNN_LIBRARY_PATH=$CUDNN_LIB
export LD_LIBRARY_PATH=$PWD/$S/lib:${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDNN_LIB:/usr/local/cuda/lib64
{ echo "cudnn lib: $CUDNN_LIB"; ls $CUDNN_LIB; python3 -m pip list 2>/dev/null | grep -i -E "^torch |cudnn|nvrtc"; ldconfig -p | grep -E "nvrtc|cudnn" ; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; } > $R/env.txt 2>&1
t() { local n=$1; shift; echo "== $n: $*"; local t0=$(date +%s); timeout "$@"; local rc=$?; echo "== $n rc=$rc $(( $(date +%s)-t0 ))s"; }
{
t gtest 50 env NVDET_TEST_REQUIRE_CUDNN=1 $S/nvdet_gpu_tests --gtest_filter='GpuCudnnAttention.*'
$S/nvdet list 2>&1 | grep -A2 cudnn
t audit-decode 70 $S/nvdet audit $S/scenarios/decode-kv-sweep.yaml --filter 'kv_len=(1000|4096),batch=[0-9]+,filler_kv_len=(same|8000),position=first|kv_len=32768,batch=(1|8),filler_kv_len=same,position=first' --report-dir $R --format md,json
t audit-prefill 35 $S/nvdet audit $S/scenarios/prefill-chunk-sweep.yaml --filter 'prefill_chunk=(16|256|whole),prefix_len=(0|2048),batch=1' --report-dir $R --format md,json
t bench-decode 45 $S/nvdet bench $S/scenarios/decode-kv-sweep.yaml --baseline cudnn --filter 'kv_len=(1000|32768),batch=(1|8|64),filler_kv_len=same,position=first' --report-dir $R
t bench-prefill 25 $S/nvdet bench $S/scenarios/prefill-chunk-sweep.yaml --baseline cudnn --filter 'prefill_chunk=(512|whole),prefix_len=(0|2048),batch=1' --report-dir $R
} 2>&1 | tee $R/log.txt
cd $OUT && tar czf results.tgz r && rm -rf r
