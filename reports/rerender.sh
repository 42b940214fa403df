#!/usr/bin/env bash
# Renders the committed audit reports again from their JSON reports with the writers of the nvdet
# build in $NVDET_BUILD (default build/): no GPU and no backend runs. Run from the repository
# root after a report writer changes; a second run changes nothing. NAME.json.gz files are
# decompressed to a temporary folder, re-rendered and compressed again. The console transcripts
# (*.console.txt) and bench tables are not re-rendered: they need the GPU (reports/run-gpu.sh).
set -euo pipefail
nvdet=${NVDET_BUILD:-build}/tools/nvdet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dir in reports/h200/audit reports/h200/model; do
  for report in "$dir"/*.json "$dir"/*.json.gz; do
    [[ -e $report ]] || continue
    # Only audit reports (bench, bisect and manifest files have other shapes).
    case $report in
      *.gz)
        name=$(basename "$report" .json.gz)
        gzip -dc "$report" >"$tmp/$name.json"
        grep -q '"schema_version"' "$tmp/$name.json" && grep -q '"divergences"' "$tmp/$name.json" || continue
        formats=md,json
        [[ -e $dir/$name.html ]] && formats=$formats,html
        "$nvdet" report "$tmp/$name.json" --report-dir "$tmp/out" --format "$formats" >/dev/null || [[ $? == 1 ]]
        gzip -9n <"$tmp/out/$name.json" >"$report"
        rm "$tmp/out/$name.json"
        cp "$tmp/out/$name".* "$dir/"
        ;;
      *)
        grep -q '"divergences"' "$report" || continue
        name=$(basename "$report" .json)
        formats=md,json
        [[ -e $dir/$name.html ]] && formats=$formats,html
        # Exit 1 restates a failed audit; anything else is an error.
        "$nvdet" report "$report" --report-dir "$dir" --format "$formats" >/dev/null || [[ $? == 1 ]]
        ;;
    esac
    echo "re-rendered $report ($formats)"
  done
done
