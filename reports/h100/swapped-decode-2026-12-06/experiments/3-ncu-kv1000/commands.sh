#!/usr/bin/env bash
# ncu of the swapped form at KV 1000, batch 1 (build 1c40b1d, H100); the SASS-level sampling
# (not committed: 2 MB) had 198 samples, 71 of them stall_no_inst, 43 long_sb, 19 barrier.
ncu --clock-control none --cache-control none --set full --import-source yes -k regex:attention_tc_kernel \
  --launch-skip 8 --launch-count 1 -o att-kv1000 \
  nvdet bench scenarios/decode-kv-sweep.yaml --backends cuda-invariant --filter 'kv_len=1000,batch=1,filler_kv_len=same,position=first'
ncu -i att-kv1000.ncu-rep --page details > att-kv1000-details.txt
