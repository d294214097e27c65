#!/usr/bin/env bash
# Runs every test: the C++ formatting check (clang-format, .clang-format) and function length
# limit (tools/function_length.py), C++ unit and
# validation tests (CTest), Python tests (pytest, which also
# executes the notebooks), then the unit tests again under ASan+UBSan and the scenario
# fuzzer for 60 s under ASan. `--quick` stops after the Release tests.
#   tools/test.sh [--quick]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
"$root/tools/setup.sh"
jobs=$(nproc)

echo "== C++ formatting (clang-format --dry-run -Werror; fix with clang-format -i FILE)"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z '*.cpp' '*.h' '*.cc' | xargs -0 clang-format --dry-run -Werror
else
  find models sim python tools -name '*.cpp' -o -name '*.h' -o -name '*.cc' | xargs clang-format --dry-run -Werror
fi

echo "== C++ function length (tools/function_length.py: no function body over 120 lines)"
/usr/bin/python3 "$root/tools/function_length.py" --top 3

echo "== C++ tests (Release)"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== Python tests"
PYTHONPATH="$root/python" /usr/bin/python3 -m pytest -q tests/python

[[ "${1:-}" == "--quick" ]] && exit 0

echo "== C++ unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
if [[ ! -f build-asan/build.ninja ]]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
    -DCT_SANITIZE=ON -DCT_PYTHON=OFF -DCT_BENCH=OFF >/dev/null
fi
ninja -C build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit

echo "== scenario loader fuzzing (libFuzzer + ASan, 60 s)"
if [[ ! -f build-fuzz/build.ninja ]]; then
  CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCT_FUZZ=ON -DCT_PYTHON=OFF -DCT_BENCH=OFF >/dev/null
fi
ninja -C build-fuzz -j"$jobs" fuzz_scenario
corpus=build-fuzz/corpus
mkdir -p "$corpus"
cp scenarios/* tests/fuzz/seeds/* "$corpus"/ 2>/dev/null || true
log=build-fuzz/fuzz.log
# A fixed seed: CI explores the same inputs, in the same order, as a local run of this script.
if ! build-fuzz/models/scenario/fuzz_scenario -seed=1 -max_total_time=60 -timeout=10 -rss_limit_mb=4096 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix=build-fuzz/ "$corpus" >"$log" 2>&1; then
  tail -n 60 "$log"
  echo "fuzzer found a failure; the input is build-fuzz/crash-* (or leak-*, timeout-*)" >&2
  exit 1
fi
tail -n 12 "$log"

echo "== trace importer fuzzing (libFuzzer + ASan, 20 s each: Chakra ET, Kineto JSON)"
ninja -C build-fuzz -j"$jobs" fuzz_chakra fuzz_kineto
for target in chakra kineto; do
  corpus=build-fuzz/corpus-$target
  mkdir -p "$corpus"
  if [[ $target == chakra ]]; then seeds=(tests/fuzz/trace-seeds/*.et); else seeds=(tests/fuzz/trace-seeds/*.json tests/fuzz/trace-seeds/*.json.gz); fi
  cp "${seeds[@]}" "$corpus"/
  log=build-fuzz/fuzz-$target.log
  if ! build-fuzz/models/trace/fuzz_$target -seed=1 -max_total_time=20 -timeout=10 -rss_limit_mb=4096 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix=build-fuzz/ "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz_$target found a failure; the input is build-fuzz/crash-* (or leak-*, timeout-*)" >&2
    exit 1
  fi
  tail -n 12 "$log"
done
echo "== all tests passed"
