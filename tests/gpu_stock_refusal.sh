#!/usr/bin/env bash
# The stock path (pack + NCCL all-to-all + combine) needs one GPU per rank:
# NCCL refuses two ranks of a communicator on one GPU. With ranks sharing a
# GPU, `--impl stock` and `--impl both` must be refused as a missing
# environment: exit 2, one stderr line saying one GPU per rank is needed,
# promptly, nothing left behind. With >= 2 GPUs the same commands must run
# instead: `--impl both --world 2 --suite smoke` (stock and direct compared)
# and `--impl stock` pass; the refusal is then checked with
# CUDA_VISIBLE_DEVICES cut to one GPU.
# Usage: gpu_stock_refusal.sh path/to/dcp-check
# shellcheck source=tests/gpu_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/gpu_lib.bash"
gpu_init gpu_stock_refusal "$@"
SMOKE=(--world 2 --suite smoke)

# expect_refusal NAME IMPL: ranks sharing the GPU, --impl IMPL is refused.
expect_refusal() {
  local name=$1 impl=$2 lines
  start_dcp "$name" "${SMOKE[@]}" --impl "$impl"
  finish_dcp 120
  expect_rc "$name" 2 "--impl $impl with 2 ranks on one GPU is refused as a missing environment"
  expect_within "$name" 60
  if grep -Eq 'one GPU per rank' "$WORK/$name.err"; then
    pass "$name: stderr says one GPU per rank is needed: $(grep -m1 'one GPU per rank' "$WORK/$name.err")"
  else
    fail "$name: stderr does not say 'one GPU per rank'"
    show_tail "$name"
  fi
  lines=$(grep -c . "$WORK/$name.err")
  if ((lines == 1)); then
    pass "$name: exactly one line on stderr (README exit code 2)"
  else
    fail "$name: $lines lines on stderr, want 1 (README exit code 2)"
    sed 's/^/    stderr: /' "$WORK/$name.err" | head -n 10
  fi
  expect_clean "$name"
}

if ((NUM_GPUS >= 2)); then
  echo "note: $NUM_GPUS GPUs: the stock path must run; the refusal is checked on one GPU"
  n=$(num_cases "${SMOKE[@]}")
  for impl in both stock; do
    run_dcp "impl_$impl" 240 "${SMOKE[@]}" --impl "$impl"
    expect_rc "impl_$impl" 0 "--impl $impl on $NUM_GPUS GPUs (one per rank)" &&
      expect_pass_verdict "impl_$impl" "$n"
  done
  CUDA_VISIBLE_DEVICES=$(first_gpu)
  export CUDA_VISIBLE_DEVICES
  echo "note: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES: both ranks on one GPU from here on"
fi

expect_refusal stock stock
expect_refusal both both

gpu_finish
