#!/usr/bin/env bash
# The 1000-completion experiment (scenarios/traffic-gpu.yaml, README "Serving traffic") on one GPU,
# in shards, so that a machine lent for a few minutes at a time can finish it over several calls:
# each call runs some shards (the shards that already have a report are not run again), and the
# last merges every shard's JSON into one report set with `nvdet report`.
#
# Usage, from the repository root: reports/run-gpu-traffic.sh OUT_DIR [BUILD_DIR]
#   NVDET_TRAFFIC_SHARDS   how many shards the sweep is cut into (default 4)
#   NVDET_TRAFFIC_RUN      which shards this call runs, e.g. "1 2" (default: every one not yet run)
#   NVDET_TRAFFIC_PARALLEL how many of them run at once, one process each (default 1). Shards share
#                          a GPU well: the engine's steps are small (on an H200, 4 at a time ran
#                          the 1000 replays of traffic-gpu.yaml in 2 x 345 s over 8 shards)
#   NVDET_TRAFFIC_SCENARIO the scenario (default scenarios/traffic-gpu.yaml)
# Writes OUT_DIR/shard-I-of-N/ (reports, stderr with the progress lines, seconds), and, once every
# shard has a report, OUT_DIR/merged/ and OUT_DIR/summary.txt. Exits 1 if an invariant backend
# failed its expectation in a shard or in the merge.
set -uo pipefail
out=${1:?usage: reports/run-gpu-traffic.sh OUT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
# The build folder as an absolute path (the folder may be given either way).
build_dir=$(cd "$build" 2>/dev/null && pwd) || { echo "$0: no build folder '$build'" >&2; exit 2; }
export LD_LIBRARY_PATH=$build_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvdet=$build/tools/nvdet
scenario=${NVDET_TRAFFIC_SCENARIO:-scenarios/traffic-gpu.yaml}
n=${NVDET_TRAFFIC_SHARDS:-4}
run=${NVDET_TRAFFIC_RUN:-$(seq 1 "$n")}
parallel=${NVDET_TRAFFIC_PARALLEL:-1}
run_shard() {  # run_shard I: one shard's audit, its reports and exit code in its folder
  local i=$1 dir=$out/shard-$1-of-$n t0=$SECONDS rc
  mkdir -p "$dir"
  "$nvdet" audit "$scenario" --shard "$i/$n" --report-dir "$dir" --format json,md \
    >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  rc=$?
  printf 'shard %s/%s: exit %d, %d s\n' "$i" "$n" "$rc" "$((SECONDS - t0))" | tee "$dir/seconds.txt"
}
started=()
for i in $run; do
  if ls "$out/shard-$i-of-$n"/*.json >/dev/null 2>&1; then
    echo "shard $i/$n: already has a report in $out/shard-$i-of-$n"
    continue
  fi
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
  run_shard "$i" &
  started+=("$i")
done
wait
status=0
for i in "${started[@]}"; do
  grep -q ': exit 0,' "$out/shard-$i-of-$n/seconds.txt" 2>/dev/null || status=1
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
