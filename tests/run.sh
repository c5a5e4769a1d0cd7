#!/usr/bin/env bash
# tests/run.sh — install what the build needs (if missing), build patchgrad, run every test.
#
#   bash tests/run.sh                          # Release build in build/, all tests
#   BUILD_DIR=build-asan bash tests/run.sh -DPATCHGRAD_SANITIZE=ON   # extra CMake flags pass through
#
# Prints ctest's summary line ("100% tests passed, 0 tests failed out of N") last.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
command -v curl >/dev/null || missing+=(curl)  # only the download script's test needs it
if ! ls /usr/include/catch2/catch.hpp /usr/include/catch2/catch_all.hpp \
        /usr/local/include/catch2/catch_all.hpp /opt/homebrew/include/catch2/catch_all.hpp >/dev/null 2>&1; then
  missing+=(catch2)
fi
if ((${#missing[@]})); then
  if command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "tests/run.sh: installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "tests/run.sh: please install ${missing[*]} (e.g. 'brew install cmake catch2')" >&2
    exit 1
  fi
fi

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@"
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
