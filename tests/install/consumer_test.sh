#!/usr/bin/env bash
# tests/install/consumer_test.sh — patchgrad from the outside, the two ways a project of your
# own gets it, with the template tutorials/own_project/ as that project:
#   1. installed: `cmake --install BUILD --prefix BUILD/consumer/install`, then the template
#      configured with find_package(patchgrad 0.9) against that prefix;
#   2. as a subdirectory: the template with -DPATCHGRAD_SOURCE_DIR=<this tree>, which builds
#      only the libraries it links (patchgrad's tests and chapters are off there).
# Both builds treat warnings in the template and patchgrad's headers as errors, and run the
# template, which fails unless its model learned the task. CI runs this after its default build.
#
#   bash tests/install/consumer_test.sh build     # BUILD: a built patchgrad (cmake --build build)
#
# JOBS (default 2) is the parallelism of the subdirectory build.
set -euo pipefail
build=$(cd "${1:?usage: tests/install/consumer_test.sh BUILD_DIR}" && pwd)
cd "$(dirname "$0")/../.."
work=$build/consumer
prefix=$work/install
rm -rf "$work"
flags=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror")

echo "-- install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/patchgrad lib/cmake/patchgrad/patchgradConfig.cmake lib/cmake/patchgrad/patchgradConfigVersion.cmake \
    include/patchgrad/autograd/tensor.h include/patchgrad/autograd/version.h include/patchgrad/vit/train/trainer.h; do
    [ -e "$prefix/$f" ] || { echo "consumer_test: the install lacks $f" >&2; exit 1; }
done
[ ! -e "$prefix/include/patchgrad/vit/cli" ] || { echo "consumer_test: the command's own vit/cli/ was installed" >&2; exit 1; }
"$prefix/bin/patchgrad" --version

echo "-- the template with find_package(patchgrad 0.9)"
cmake -S tutorials/own_project -B "$work/find_package" "${flags[@]}" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/find_package" >/dev/null
"$work/find_package/own_project"

echo "-- the template with add_subdirectory(patchgrad)"
cmake -S tutorials/own_project -B "$work/add_subdirectory" "${flags[@]}" -DPATCHGRAD_SOURCE_DIR="$PWD" >/dev/null
cmake --build "$work/add_subdirectory" -j "${JOBS:-2}" >/dev/null
"$work/add_subdirectory/own_project"
echo "consumer_test: passed"
