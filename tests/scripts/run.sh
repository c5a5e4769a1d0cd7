#!/usr/bin/env bash
# tests/scripts/run.sh — install what the build needs (if missing), build patchgrad, run every
# test.
#
#   bash tests/scripts/run.sh                  # Release build in build/, all tests
#   BUILD_DIR=build-asan bash tests/scripts/run.sh -DPATCHGRAD_SANITIZE=ON   # extra CMake flags pass through
#
# Ends with ctest's summary ("100% tests passed, 0 tests failed out of N", the total time, and
# the tests skipped because this CPU lacks their instruction set, listed as "did not run").
set -euo pipefail
cd "$(dirname "$0")/../.."

# cmake, g++, make, curl and Catch2, installed with apt-get when missing.
source tests/scripts/install_deps.sh
install_missing tests/scripts/run.sh cmake g++ make curl catch2

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@"
cmake --build "$build" -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
ctest --test-dir "$build" --output-on-failure -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
