#!/usr/bin/env bash
# kappasim set-up, build and run, for a fresh Debian 12 machine (run as root, or with sudo).
#
#   bash tools/quickstart.sh run     install missing packages, build (Release), run the main job
#   bash tools/quickstart.sh test    install missing packages, build, run the whole test suite
#                                    (Debug build, then the ASan+UBSan build)
#   bash tools/quickstart.sh bench   build (Release) and run the benchmarks
#
# Build folders: build/release, build/debug, build/asan. Results of `run`: out/report/.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
PACKAGES=(cmake ninja-build g++ pkg-config libsystemc-dev libyaml-cpp-dev libfmt-dev
          libboost-program-options-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "quickstart: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {  # build TYPE DIR [extra cmake args]
  local type=$1 dir=$2
  shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}

suite() {  # suite DIR
  ctest --test-dir "$1" -j "$JOBS" --output-on-failure --timeout 300
}

case "${1:-}" in
  run)
    install_missing
    build Release build/release -DKAPPASIM_BUILD_TESTS=OFF
    ./build/release/kappasim report --out out/report
    ;;
  test)
    install_missing
    build Debug build/debug
    suite build/debug
    # The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
    build Asan build/asan
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      LSAN_OPTIONS=suppressions="$PWD/tools/lsan.supp":print_suppressions=0 \
      suite build/asan
    ;;
  bench)
    install_missing
    build Release build/release
    bash bench/run.sh build/release
    ;;
  *)
    echo "usage: bash tools/quickstart.sh run|test|bench" >&2
    exit 2
    ;;
esac
