#!/usr/bin/env bash
# kappasim set-up, build and run, for a fresh Debian 12 machine (run as root, or with sudo).
#
#   bash tools/quickstart.sh run     install missing packages, build (Release), run the main job
#                                    (kappasim reproduce -> out/reproduce/report.md, and the
#                                    analytic report -> out/report/)
#   bash tools/quickstart.sh test    install missing packages, build, run the whole test suite
#                                    (Debug build with g++ (-Og), then the ASan+UBSan build with
#                                    clang++, which also holds the fuzz targets, run for 45 s
#                                    each); also checks the C++ sources against
#                                    .clang-format (tools/format.sh --check) and fails at the end
#                                    if any differ
#   bash tools/quickstart.sh bench   build (Release) and run the benchmarks
#   bash tools/quickstart.sh fuzz    build the libFuzzer targets (clang) and run each for
#                                    FUZZ_SECONDS (default 60) on a copy of its seed corpus;
#                                    fails if any target finds a crash
#
# Build folders: build/release, build/debug, build/asan, build/fuzz. Results of `run`:
# out/reproduce/ (resumes if rerun) and out/report/. Fuzz logs, grown corpora and crashing
# inputs: build/fuzz/run/<target>/ (`fuzz`), build/asan/run/<target>/ (`test`).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
# What `run` needs: the compiler, CMake and the libraries kappasim links, and gnuplot for the
# report's figures. The suite and the benchmarks add GoogleTest, Google Benchmark, clang and its
# sanitizer runtime (the ASan+UBSan and fuzz builds): about 250 MB installed that `run` does not
# use (issue 24: a fresh machine running in 4 minutes), so `run` leaves them out.
PACKAGES=(cmake ninja-build g++ pkg-config libsystemc-dev libyaml-cpp-dev libfmt-dev
          libboost-program-options-dev nlohmann-json3-dev gnuplot-nox)
DEV_PACKAGES=(libgtest-dev libbenchmark-dev clang libclang-rt-14-dev)
# `test` also needs a Slurm and munge for tests/slurm (a private single-node Slurm per run).
TEST_PACKAGES=(slurm-wlm munge)

install_missing() {  # install_missing [PACKAGE...] (default: PACKAGES)
  local missing=() wanted=("$@")
  [ ${#wanted[@]} -eq 0 ] && wanted=("${PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "quickstart: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Unity builds (CMakeLists.txt KAPPASIM_UNITY): a fresh machine compiles each target's sources in
# batches, which parses the headers once per batch; UNITY=OFF builds file by file.
UNITY=${UNITY:-ON}

build() {  # build TYPE DIR [--target TARGET] [extra cmake args]
  local type=$1 dir=$2 target=()
  shift 2
  if [ "${1:-}" = "--target" ]; then
    target=(--target "$2")
    shift 2
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DKAPPASIM_UNITY="$UNITY" "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS" "${target[@]}"
}

suite() {  # suite DIR
  ctest --test-dir "$1" -j "$JOBS" --output-on-failure --timeout 300
}

FUZZ_TARGETS=(fuzz_units fuzz_config fuzz_trace fuzz_sweep)

fuzz() {  # fuzz [DIR]: every target for FUZZ_SECONDS on a copy of tests/fuzz/corpus/<target>
  # DIR (default build/fuzz): a clang Asan build with KAPPASIM_FUZZ=ON; configured here when it
  # is not one already (then only the fuzz targets and what they link are built).
  local seconds=${FUZZ_SECONDS:-60} dir=${1:-build/fuzz} failed=0
  if ! grep -qs '^KAPPASIM_FUZZ:BOOL=ON' "$dir/CMakeCache.txt"; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Asan -DCMAKE_CXX_COMPILER=clang++ \
          -DKAPPASIM_FUZZ=ON -DKAPPASIM_UNITY="$UNITY" >/dev/null
  fi
  cmake --build "$dir" -j "$JOBS" --target "${FUZZ_TARGETS[@]}"
  # The targets run side by side, $JOBS at a time (each is one process on one core): every target
  # still fuzzes for the full $seconds, and the wall time is ceil(targets / JOBS) x $seconds.
  local running=0
  for t in "${FUZZ_TARGETS[@]}"; do
    local work="$dir/run/$t"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/crashes"
    cp tests/fuzz/corpus/"$t"/* "$work/corpus/"   # the committed corpus is never written to
    local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                -artifact_prefix="$work/crashes/")
    [ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
    ( rc=0
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$dir/tests/fuzz/$t" "${args[@]}" "$work/corpus" >"$work/log.txt" 2>&1 || rc=$?
      echo "$rc" >"$work/rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  done
  wait || true
  for t in "${FUZZ_TARGETS[@]}"; do
    local work="$dir/run/$t"
    local rc
    rc=$(cat "$work/rc" 2>/dev/null || echo 1)
    local runs
    runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/log.txt" | tail -1)
    local found
    found=$(find "$work/crashes" -type f -print -quit)
    if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
      echo "fuzz: $t: FAILED (exit $rc) after ${runs:-?} runs; input: ${found:-none}; log: $work/log.txt"
      tail -n 40 "$work/log.txt" >&2
      failed=1
    else
      echo "fuzz: $t: ok, ${runs:-?} runs in ${seconds} s, no crash ($(find "$work/corpus" -type f | wc -l) corpus files)"
    fi
  done
  return "$failed"
}

case "${1:-}" in
  run)
    install_missing
    # Only the kappasim executable: the layer link checks and the benchmarks are 21 more
    # translation units and links that `run` never uses.
    build Release build/release --target kappasim -DKAPPASIM_BUILD_TESTS=OFF
    ./build/release/kappasim report --out out/report
    ./build/release/kappasim reproduce --out out/reproduce
    ;;
  test)
    install_missing "${PACKAGES[@]}" "${DEV_PACKAGES[@]}"
    # Slurm and munge run daemons; should their install fail on some box (a package's service
    # start in a container), the suite still runs and the Slurm test reports itself skipped.
    install_missing "${TEST_PACKAGES[@]}" ||
      echo "quickstart: could not install ${TEST_PACKAGES[*]}: tests/slurm will be skipped" >&2
    # Formatting (tools/format.sh --check): checked first, reported at once, failed at the end,
    # so one run shows both the format and the test results. Skipped, with a line, when
    # clang-format cannot be installed.
    format_rc=0
    install_missing clang-format || echo "quickstart: could not install clang-format" >&2
    if command -v clang-format >/dev/null; then
      bash tools/format.sh --check || format_rc=$?
    else
      echo "quickstart: clang-format not available: format check skipped" >&2
    fi
    # The layers and the CLI at -Og (GCC's optimisation level for debugging; asserts stay on),
    # the test code at -O0 (tests/CMakeLists.txt): the suite simulates, and at -O0 it ran ≈ 4×
    # slower (an llm-d validation run: 12.3 s at -O0, 3.1 s at -Og) for ≈ 30% less compile time
    # of those layers (issue 24: CI under 20 minutes; docs/benchmarks.md, "CI build").
    build Debug build/debug -DCMAKE_CXX_FLAGS_DEBUG="-Og -g"
    suite build/debug
    # The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang:
    # the Debug stage above is GCC's, and clang compiles the sanitizer build ≈ 2× faster than
    # GCC at -O1. The same build carries the libFuzzer targets (KAPPASIM_FUZZ=ON: the pure
    # layers instrumented for coverage), so the fuzz stage below builds nothing again. The layer
    # link checks and the benchmarks were built by the Debug stage and are not rebuilt here.
    build Asan build/asan -DCMAKE_CXX_COMPILER=clang++ -DKAPPASIM_FUZZ=ON \
          -DKAPPASIM_LAYER_LINK_CHECKS=OFF -DKAPPASIM_BUILD_BENCH=OFF
    # LeakSanitizer: use_stacks=0. At exit LSan scans every thread's stack; in a SystemC process
    # that scan can read a page of a coroutine stack that is no longer mapped, and on some kernels
    # LSan then aborts ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal error")
    # before looking for any leak, depending on stack layout (seen on 6.18). Without the thread
    # stacks, roots are still the globals, TLS and registers, and SystemC's coroutine stacks are
    # heap blocks reachable from its globals, so their contents are still scanned.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      LSAN_OPTIONS=suppressions="$PWD/tools/lsan.supp":print_suppressions=0:use_stacks=0 \
      suite build/asan
    # The libFuzzer targets (tests/fuzz), 45 s each, from the ASan build above.
    FUZZ_SECONDS=45 fuzz build/asan
    if [ "$format_rc" -ne 0 ]; then
      echo "quickstart: the tests passed, but files differ from .clang-format (listed above):" \
           "bash tools/format.sh formats them" >&2
      exit 1
    fi
    ;;
  fuzz)
    install_missing "${PACKAGES[@]}" "${DEV_PACKAGES[@]}"
    fuzz
    ;;
  bench)
    # GNU time: peak RSS in bench/scaling.sh
    install_missing "${PACKAGES[@]}" "${DEV_PACKAGES[@]}" time
    build Release build/release
    bash bench/run.sh build/release
    ;;
  *)
    echo "usage: bash tools/quickstart.sh run|test|bench|fuzz" >&2
    exit 2
    ;;
esac
