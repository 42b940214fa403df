#!/usr/bin/env bash
# Golden-manifest round trip, as a team would run it across GPUs: record a manifest, verify the
# same run against it (no change, exit 0), then verify against a copy in which one recorded hash
# of the invariant backend was altered (the mismatch is reported, exit 1).
# Usage: reports/manifest-demo.sh NVDET SCENARIO OUT_DIR [INVARIANT_BACKEND]
set -u
nvdet=$1 scenario=$2 out=$3 backend=${4:-cuda-invariant}
mkdir -p "$out"
"$nvdet" audit "$scenario" --quiet --record "$out/manifest.json" >"$out/manifest-record.txt" 2>&1
echo "record: exit $?" | tee -a "$out/manifest-demo.txt"
"$nvdet" audit "$scenario" --verify "$out/manifest.json" >"$out/manifest-verify-same.txt" 2>&1
echo "verify, same GPU and build: exit $?" | tee -a "$out/manifest-demo.txt"
python3 - "$out/manifest.json" "$out/manifest-altered.json" "$backend" <<'PY'
import json, sys
src, dst, backend = sys.argv[1:4]
m = json.load(open(src))
scenario = next(iter(m["scenarios"].values()))
contexts = scenario["entries"][backend]
ctx = sorted(contexts)[-1]
rep = contexts[ctx]["0"]
req = sorted(rep)[0]
h = rep[req]["hash"]
rep[req]["hash"] = h[:-1] + ("0" if h[-1] != "0" else "1")  # one hex digit changed
json.dump(m, open(dst, "w"), indent=1)
print(f"altered {backend} / {ctx} / request {req}: {h} -> {rep[req]['hash']}")
PY
# The failed verify is part of the audit's result: every report format says FAIL (JUnit: a
# failing verify/<backend> case), as the exit code does.
"$nvdet" audit "$scenario" --verify "$out/manifest-altered.json" \
  --report-dir "$out/verify-altered" --format md,json,junit,html >"$out/manifest-verify-altered.txt" 2>&1
echo "verify against the altered manifest: exit $?" | tee -a "$out/manifest-demo.txt"
