#!/usr/bin/env bash
# Here (no GPU): carried builds (ci/carry.sh) of several commits for one
# device call of ci/carry-ab.sh. Each REF is checked out in turn in one
# scratch worktree (build-refs/src) and built in one build folder
# (build-refs/build, sm_90), so after the first only what differs between
# refs recompiles; each is packed as build-carry-NAME (NAME: the ref, "/" as
# "-"). build-refs/ is ignored by git and kept for the next run.
#   ci/carry-refs.sh REF [REF ...]    e.g. ci/carry-refs.sh main next-table
# then: carry ["build-carry-main", "build-carry-next-table"] and
#   bash ci/carry-ab.sh build-carry-main build-carry-next-table
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ $# -ge 1 ]] || { echo "usage: ci/carry-refs.sh REF [REF ...]" >&2; exit 2; }
root=$PWD
scratch=$root/build-refs
for ref in "$@"; do  # every ref resolves before anything is built
  git rev-parse --verify -q "$ref^{commit}" >/dev/null ||
    { echo "ci/carry-refs.sh: $ref is not a commit here" >&2; exit 2; }
done
git worktree prune
if ! git -C "$scratch/src" rev-parse --git-dir >/dev/null 2>&1; then
  rm -rf "$scratch/src"
  git worktree add -q --detach "$scratch/src" "$1"
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
for ref in "$@"; do
  start=$SECONDS
  git -C "$scratch/src" checkout -q --detach "$(git rev-parse "$ref^{commit}")"
  [[ -f $scratch/build/CMakeCache.txt ]] ||
    cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${launcher[@]}" >/dev/null
  (cd "$scratch/src" && bash ci/carry.sh "$scratch/build" >/dev/null)  # the ref's own packing
  name=build-carry-${ref//\//-}
  rm -rf "${root:?}/$name"
  mv "$scratch/src/build-carry" "$root/$name"
  echo "$name: $ref at $(git rev-parse --short "$ref^{commit}"), $((SECONDS - start)) s"
done
