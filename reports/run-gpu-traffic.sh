#!/usr/bin/env bash
# The 1000-completion experiment (scenarios/traffic-gpu.yaml, README "Serving traffic") on one GPU,
# in shards, so that a machine lent for a few minutes at a time can finish it over several calls:
# each call runs some shards (the shards that already have a report are not run again), and the
# last merges every shard's JSON into one report set with `nvdet report`.
#
# Usage, from the repository root: reports/run-gpu-traffic.sh OUT_DIR [BUILD_DIR]
#   NVDET_TRAFFIC_SHARDS   how many shards the sweep is cut into (default 4)
#   NVDET_TRAFFIC_RUN      which shards this call runs, e.g. "1 2" (default: every one not yet run);
#                          shards share a GPU well: the engine's steps are small, so several
#                          processes at once (one per shard, same OUT_DIR) finish sooner
#   NVDET_TRAFFIC_SCENARIO the scenario (default scenarios/traffic-gpu.yaml)
# Writes OUT_DIR/shard-I-of-N/ (reports, stderr with the progress lines, seconds), and, once every
# shard has a report, OUT_DIR/merged/ and OUT_DIR/summary.txt. Exits 1 if an invariant backend
# failed its expectation in a shard or in the merge.
set -uo pipefail
out=${1:?usage: reports/run-gpu-traffic.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvdet=$build/tools/nvdet
scenario=${NVDET_TRAFFIC_SCENARIO:-scenarios/traffic-gpu.yaml}
n=${NVDET_TRAFFIC_SHARDS:-4}
run=${NVDET_TRAFFIC_RUN:-$(seq 1 "$n")}
status=0
for i in $run; do
  dir=$out/shard-$i-of-$n
  if ls "$dir"/*.json >/dev/null 2>&1; then
    echo "shard $i/$n: already has a report in $dir"
    continue
  fi
  mkdir -p "$dir"
  t0=$SECONDS
  "$nvdet" audit "$scenario" --shard "$i/$n" --report-dir "$dir" --format json,md \
    >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  rc=$?
  printf 'shard %s/%s: exit %d, %d s\n' "$i" "$n" "$rc" "$((SECONDS - t0))" | tee "$dir/seconds.txt"
  ((rc == 0)) || status=1
done
shards=$(ls "$out"/shard-*-of-"$n"/*.json 2>/dev/null | grep -v '\.verify\.json$')
if [[ $(echo "$shards" | grep -c .) -eq $n ]]; then
  "$nvdet" report $shards --report-dir "$out/merged" --format md,json,html >"$out/merged.txt" 2>&1 ||
    status=1
  cat "$out"/shard-*-of-"$n"/seconds.txt >"$out/summary.txt"
  cat "$out/merged.txt" >>"$out/summary.txt"
  cat "$out/summary.txt"
else
  echo "$(echo "$shards" | grep -c .) of $n shards have reports; run again to finish and merge"
fi
exit $status
