#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this): the setup scripts, then each
# workflow preset in turn (docs/contributing.md "CI's presets": what each covers that no
# other does, and its time).  Stops at the first failure.  At the end, or at that failure,
# prints each step's wall time and the total, with a warning past CI's 60-minute budget.
#
#   scripts/test-all.sh                  every step, in CI's order
#   scripts/test-all.sh sanitize tsan    only these presets (after the setup)
#   scripts/test-all.sh --list           the steps, one a line
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(test test-cpus llama.cpp-test eighths avx512-emulated sanitize scalar-only aarch64 tsan fuzz)
budget_s=3600  # CI's budget; its hard limit is 5400 s, the margin is for a slow machine

if [ "${1:-}" = --list ]; then
  printf '%s\n' setup "${presets[@]}"
  exit 0
fi
selected=("${presets[@]}")
if [ $# -gt 0 ]; then
  for p in "$@"; do
    [[ " ${presets[*]} " == *" $p "* ]] || { echo "test-all.sh: '$p' is not one of: ${presets[*]}" >&2; exit 2; }
  done
  selected=("$@")
fi

names=()
times=()
tests_run=0
tests_failed=0
logs=$(mktemp -d)
start_all=$(date +%s)
report() {
  local rc=$? now=$(date +%s)
  local total=$(( now - start_all ))
  if [ "$rc" -ne 0 ] && [ -n "${current:-}" ]; then
    names+=("$current (FAILED)")
    times+=($(( now - step_t0 )))
    count_tests
  fi
  echo
  echo "test-all.sh: wall time per step (s)"
  for i in "${!names[@]}"; do
    printf '  %-18s %6s\n' "${names[$i]}" "${times[$i]}"
  done
  printf '  %-18s %6s\n' total "$total"
  rm -rf "$logs"
  if [ "$total" -gt "$budget_s" ]; then
    echo "test-all.sh: WARNING: $total s is over CI's budget of $budget_s s (the hard limit is 5400 s): trim a preset (docs/contributing.md)"
  fi
  echo "CTest, all presets: $(( tests_run - tests_failed )) passed, $tests_failed failed"
}
trap report EXIT

step() {  # step NAME COMMAND...: runs COMMAND, timed under NAME
  current=$1
  shift
  echo "=== test-all.sh: $current"
  step_t0=$(date +%s)
  "$@" 2>&1 | tee "$logs/step.log"
  names+=("$current")
  times+=($(( $(date +%s) - step_t0 )))
  count_tests
}

count_tests() {  # CTest's summaries in the step's output ("0 tests failed out of 276"), summed over the run
  local failed run
  read -r failed run < <(grep -oE '[0-9]+ tests failed out of [0-9]+' "$logs/step.log" 2>/dev/null |
                         awk '{f += $1; t += $6} END {print f + 0, t + 0}')
  tests_failed=$(( tests_failed + failed ))
  tests_run=$(( tests_run + run ))
  rm -f "$logs/step.log"
}

if [[ " ${selected[*]} " == *" llama.cpp-test "* ]]; then  # its models and llama.cpp's sources
  step setup bash -c 'scripts/setup-debian.sh && scripts/setup-model.sh && scripts/setup-llamacpp.sh'
else
  step setup scripts/setup-debian.sh
fi
# AVX-512 is tested once per machine: where the CPU runs it and has VNNI, the test preset
# (TQ_ISAS=native) ran every head dim and rate of it natively, with and without VNNI
# (test-plain-dot), so the whole run skips the emulation of it; elsewhere avx512-emulated
# runs its kernels on SIMDe.  Named on the command line, it always runs.  (VNNI is read from
# Linux's CPU flags, avx512_vnni: the kernels' has_vnni() asks the same CPU bit.)
avx512_native() {
  [ -x build/test/tools/tq ] && grep -qw avx512_vnni /proc/cpuinfo 2>/dev/null &&
    build/test/tools/tq list --json | python3 -c 'import json, sys
isas = {i["name"]: i for i in json.load(sys.stdin)["isas"]}
sys.exit(0 if isas["avx512"]["compiled"] and isas["avx512"]["runs_here"] else 1)'
}
for p in "${selected[@]}"; do
  if [ "$p" = avx512-emulated ] && [ $# -eq 0 ] && avx512_native; then
    echo "=== test-all.sh: avx512-emulated skipped: this CPU runs AVX-512 with VNNI, and the test preset ran its kernels natively"
    continue
  fi
  step "$p" cmake --workflow --preset "$p"
done
current=""
