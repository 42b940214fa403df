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
# Every audit report under reports/ (found by its keys; bench, bisect, verify and manifest files
# have other shapes), written again in the formats that sit beside it.
formats_beside() {  # formats_beside DIR NAME
  local f=md,json
  [[ -e $1/$2.html ]] && f=$f,html
  [[ -e $1/$2.junit.xml ]] && f=$f,junit
  echo "$f"
}
find reports -name '*.json' -o -name '*.json.gz' | sort | while read -r report; do
    dir=$(dirname "$report")
    # Only audit reports (bench, bisect and manifest files have other shapes).
    case $report in
      *.gz)
        name=$(basename "$report" .json.gz)
        gzip -dc "$report" >"$tmp/$name.json"
        grep -q '"divergences"' "$tmp/$name.json" && grep -q '"cases"' "$tmp/$name.json" || continue
        formats=$(formats_beside "$dir" "$name")
        "$nvdet" report "$tmp/$name.json" --report-dir "$tmp/out" --format "$formats" >/dev/null || [[ $? == 1 ]]
        gzip -9n <"$tmp/out/$name.json" >"$report"
        rm "$tmp/out/$name.json"
        cp "$tmp/out/$name".* "$dir/"
        ;;
      *)
        grep -q '"divergences"' "$report" && grep -q '"cases"' "$report" || continue
        name=$(basename "$report" .json)
        formats=$(formats_beside "$dir" "$name")
        # Exit 1 restates a failed audit; anything else is an error.
        "$nvdet" report "$report" --report-dir "$dir" --format "$formats" >/dev/null || [[ $? == 1 ]]
        ;;
    esac
    echo "re-rendered $report ($formats)"
done
