#!/bin/bash
# One device call's measurements (docs/performance.md): why Wan 2.1's decode died on an H200, its `torch.compile`
# row and its streamed decode against the whole one, then `torch.compile` again at the image and CogVideoX sizes
# (measured 2026-11-29), in that order, each step cut to what is left of BUDGET seconds (and not begun without its
# least useful time) so that the steps that finished come back. Rows are appended to $OUT/*.jsonl and each step's
# log to $OUT/NAME.log.
#   on the GPU box (../shared/gpu/README.md):  BUDGET=560 bash scripts/gpu_headline.sh   (carry .whl and .old)
#   a dry run on a CPU:                        SMALL=1 OUT=/tmp/o bash scripts/gpu_headline.sh
set -u
OUT=${OUT:?set OUT to the folder for the rows}
BUDGET=${BUDGET:-520}
start=$(date +%s)
if [ -n "${SMALL:-}" ]; then
  stream_case="wan-tiny=9x32x32"; small="--small"; probe_case="wan-tiny=9x32x64"
else
  stream_case="wan2.1=81x480x832"; small=""; probe_case="wan2.1=9x480x832"
fi
step() {  # step NAME SECONDS MIN COMMAND...: COMMAND under a timeout of min(SECONDS, what is left), not begun under MIN
  local name=$1 limit=$2 least=$3; shift 3
  local left=$(( BUDGET - ($(date +%s) - start) ))
  (( left < limit )) && limit=$left
  if (( limit < least )); then echo "$name: not run, ${left}s left (needs ${least}s)" | tee -a "$OUT/steps.txt"; return; fi
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - t0 ))s (limit ${limit}s)" | tee -a "$OUT/steps.txt"
  tail -c 1500 "$OUT/$name.log"
}
# Wan 2.1's decode died with CUDA_ERROR_ILLEGAL_INSTRUCTION on an H200 (2026-11-29, docs/limits.md): first which
# variant finishes (scripts/crash_probe.py; "old" needs .old: git archive 8c9c9a2 | tar -x -C .old, carried), and
# where this checkout fails and XLA's Triton softmax fusions off finish, Wan's rows run with them off (the row's
# environment says so).
step probe-wan2.1 260 100 python3 scripts/crash_probe.py "$probe_case" --variants head,no-triton-softmax,blocking,old \
  --timeout 60 --json "$OUT/probe.jsonl"
wan_flags=$(python3 -c '
import json, sys
rows = {r["variant"]: r["outcome"] for r in map(json.loads, open(sys.argv[1]))}
if rows.get("head") != "finished" and rows.get("no-triton-softmax") == "finished":
    print("--xla_disable_hlo_passes=triton-softmax-rewriter")' "$OUT/probe.jsonl" 2>/dev/null)
echo "Wan rows with XLA_FLAGS=${wan_flags:-(none)}" | tee -a "$OUT/steps.txt"
# A torch.compile side past --compile-timeout is recorded as such and its row goes on with the other sides.
step compile-wan2.1 270 200 env XLA_FLAGS="$wan_flags" python3 scripts/gpu_table.py wan2.1-480p-decode $small --compile-timeout 110 --json "$OUT/compile.jsonl"
step stream-wan2.1 150 90 env XLA_FLAGS="$wan_flags" python3 scripts/stream_bench.py --ttff --cases "$stream_case" --dtype bf16 --json "$OUT/stream.jsonl"
step compile-sdxl 160 110 python3 scripts/gpu_table.py sdxl-decode $small --compile-timeout 80 --json "$OUT/compile.jsonl"
step compile-cogvideox 270 200 python3 scripts/gpu_table.py cogvideox-480p-decode $small --compile-timeout 110 --json "$OUT/compile.jsonl"
step compile-flux 160 110 python3 scripts/gpu_table.py flux-decode $small --compile-timeout 80 --json "$OUT/compile.jsonl"
# the device tool brings back at most 8 files: the logs in one
tar -czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls *.log 2>/dev/null) 2>/dev/null && rm -f "$OUT"/*.log
