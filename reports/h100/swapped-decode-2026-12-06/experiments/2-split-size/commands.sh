#!/usr/bin/env bash
# The plan's split size as a lever (build 1c40b1d, swapped small blocks; H100): cuda-invariant at
# split sizes 128, 256 and 512 (d.yaml, p.yaml: decode-kv-sweep and prefill-chunk-sweep with a
# split_size axis; cudnn does not take split_size, so it ran in its own process on the shipped
# scenarios, twice for decode). Columns of d.txt: context, median us; p.txt: context, median us,
# TFLOP/s.
B=$PWD/ab/sw
for i in 1 2; do
  nvdet bench d.yaml --backends cuda-invariant
  nvdet bench scenarios/decode-kv-sweep.yaml --backends cudnn --filter 'kv_len=(255|1000|4096|32768),batch=(1|2|8|64),filler_kv_len=same,position=first'
done
nvdet bench p.yaml --backends cuda-invariant
nvdet bench scenarios/prefill-chunk-sweep.yaml --backends cudnn --filter 'chunk=(64|512|whole),prefix_len=0,'
