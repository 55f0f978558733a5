#!/bin/bash
# One device call's measurements (docs/performance.md): the streamed decode against the whole one at Wan 2.1's
# released size, then `torch.compile` beside TorchaxVAE at the headline sizes, in that order, each step cut to what
# is left of BUDGET seconds so that the steps that finished still come back. Rows are appended to $OUT/*.jsonl and
# each step's log to $OUT/NAME.log.
#   on the GPU box (../shared/gpu/README.md):  BUDGET=520 bash scripts/gpu_headline.sh
#   a dry run on a CPU:                        SMALL=1 OUT=/tmp/o bash scripts/gpu_headline.sh
set -u
OUT=${OUT:?set OUT to the folder for the rows}
BUDGET=${BUDGET:-520}
start=$(date +%s)
if [ -n "${SMALL:-}" ]; then
  stream_case="wan-tiny=9x32x32"; small="--small"
else
  stream_case="wan2.1=81x480x832"; small=""
fi
step() {  # step NAME SECONDS COMMAND...: COMMAND under a timeout of min(SECONDS, what is left)
  local name=$1 limit=$2; shift 2
  local left=$(( BUDGET - ($(date +%s) - start) ))
  (( left < limit )) && limit=$left
  if (( limit < 30 )); then echo "$name: not run, ${left}s left" | tee -a "$OUT/steps.txt"; return; fi
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - t0 ))s (limit ${limit}s)" | tee -a "$OUT/steps.txt"
  tail -c 1500 "$OUT/$name.log"
}
step stream-wan2.1 150 python3 scripts/stream_bench.py --ttff --cases "$stream_case" --dtype bf16 --json "$OUT/stream.jsonl"
step compile-sdxl 200 python3 scripts/gpu_table.py sdxl-decode $small --json "$OUT/compile.jsonl"
step compile-wan2.1 400 python3 scripts/gpu_table.py wan2.1-480p-decode $small --json "$OUT/compile.jsonl"
step compile-flux 200 python3 scripts/gpu_table.py flux-decode $small --json "$OUT/compile.jsonl"
step compile-cogvideox 400 python3 scripts/gpu_table.py cogvideox-480p-decode $small --json "$OUT/compile.jsonl"
