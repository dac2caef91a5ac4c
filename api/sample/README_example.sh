#!/usr/bin/env bash
# The README example: upload the bundled sample as crowd and expert files, run an HMM-Crowd job,
# poll it, fetch the report. Start the service first, in another terminal (with crowdqa installed,
# e.g. `bash scripts/run.sh`, or `crowdqa serve` inside the activated .venv); it listens on
# http://127.0.0.1:8000 and keeps its data in ./crowdqa-data. Run these steps in the folder the server runs in
# (the repository, for scripts/run.sh): `crowdqa keys create` finds the server's database in ./crowdqa-data.
set -euo pipefail
API=${CROWDQA_API:-http://127.0.0.1:8000/api/v1}
OUT=$(mktemp -d)  # the report goes here, outside the checkout
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }

# A key for a project named "demo" (the key is the last line printed).
KEY=$(crowdqa keys create --project demo | tail -n 1)
AUTH="Authorization: Bearer $KEY"
SAMPLE=$(python3 -c 'import crowdqa.api as api, pathlib; print(pathlib.Path(api.__file__).parent / "sample")')

# A dataset, then the crowd file and the expert file (spans-jsonl: doc_id, annotator, start, end, label, text).
DATASET=$(curl -sS --fail-with-body -H "$AUTH" -H 'Content-Type: application/json' \
    -d '{"name": "sample"}' "$API/datasets" | json '["id"]')
curl -sS --fail-with-body -H "$AUTH" -F file=@"$SAMPLE/crowd.jsonl" -F format=spans-jsonl -F role=crowd \
    "$API/datasets/$DATASET/uploads" | json '["summary"]'
curl -sS --fail-with-body -H "$AUTH" -F file=@"$SAMPLE/expert.jsonl" -F format=spans-jsonl -F role=expert \
    "$API/datasets/$DATASET/uploads" | json '["summary"]'

# An HMM-Crowd job (202 + Location); poll it until it is finished or failed.
JOB=$(curl -sS --fail-with-body -H "$AUTH" -H 'Content-Type: application/json' \
    -d '{"method": "hmm-crowd", "params": {}, "use_experts": false}' "$API/datasets/$DATASET/jobs" | json '["id"]')
while true; do
    STATUS=$(curl -sS --fail-with-body -H "$AUTH" "$API/jobs/$JOB" | json '["status"]')
    echo "job $JOB: $STATUS"
    case $STATUS in finished | failed) break ;; esac
    sleep 1
done

# The report: the aggregate against the expert, then the five workers with the lowest F1.
curl -sS --fail-with-body -H "$AUTH" "$API/jobs/$JOB/report" -o "$OUT/report.json"
python3 - "$OUT/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print("aggregate (%s) vs expert:" % report["method"])
for level, s in report["aggregate_vs_expert"].items():
    if isinstance(s, dict) and "f1" in s:
        print("  %-22s P=%.3f R=%.3f F1=%.3f" % (level, s["precision"], s["recall"], s["f1"]))
PY
curl -sS --fail-with-body -H "$AUTH" "$API/jobs/$JOB/workers?sort=f1&order=asc&limit=5" | python3 -c '
import json, sys
fmt = lambda x: "n/a" if x is None else "%.3f" % x
for w in json.load(sys.stdin)["data"]:
    print("%-18s %-7s P=%s R=%s F1=%s" % (w["annotator"], w["role"], fmt(w["precision"]), fmt(w["recall"]), fmt(w["f1"])))'

# The job belongs to the project "demo": sign in to the dashboard with the demo key to see it (the key in
# crowdqa-data/first-key.txt belongs to the project "default", which holds none of this).
echo "report: $OUT/report.json"
echo "dashboard: open ${API%/api/v1}/ui/ and sign in with the demo project's key $KEY"
