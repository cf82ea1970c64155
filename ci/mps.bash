# Sourced by ci/gpu.sh and ci/carry-ab.sh: a private MPS control daemon for
# their own programs (dcp-check starts its own with --mps on). mps_start
# exports its directories (every program started after joins it), mps_stop
# quits it and unsets them.
mps_start() {
  local dir
  dir=$(mktemp -d)
  mkdir -p "$dir/pipe" "$dir/log"
  export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log
  nvidia-cuda-mps-control -d || { mps_stop; return 1; }
}
mps_stop() {
  [[ -n ${CUDA_MPS_PIPE_DIRECTORY:-} ]] && echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
