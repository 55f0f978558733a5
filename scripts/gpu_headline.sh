#!/bin/bash
# One device call's measurements (docs/performance.md): `torch.compile` beside TorchaxVAE at the headline sizes,
# then the streamed decode against the whole one at Wan 2.1's released size, in that order, each step cut to what
# is left of BUDGET seconds (and not begun without its least useful time) so that the steps that finished come
# back. Rows are appended to $OUT/*.jsonl and each step's log to $OUT/NAME.log.
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
# torch.compile first (what the guide asks of a lent GPU), the video rows before their image rows; a torch.compile
# side past --compile-timeout is recorded as such and its row goes on with the other sides.
step compile-wan2.1 270 200 python3 scripts/gpu_table.py wan2.1-480p-decode $small --compile-timeout 110 --json "$OUT/compile.jsonl"
step compile-sdxl 160 110 python3 scripts/gpu_table.py sdxl-decode $small --compile-timeout 80 --json "$OUT/compile.jsonl"
step compile-cogvideox 270 200 python3 scripts/gpu_table.py cogvideox-480p-decode $small --compile-timeout 110 --json "$OUT/compile.jsonl"
step compile-flux 160 110 python3 scripts/gpu_table.py flux-decode $small --compile-timeout 80 --json "$OUT/compile.jsonl"
step stream-wan2.1 150 90 python3 scripts/stream_bench.py --ttff --cases "$stream_case" --dtype bf16 --json "$OUT/stream.jsonl"
