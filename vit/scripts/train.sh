#!/usr/bin/env bash
# vit/scripts/train.sh — the README's train command: build patchgrad for this CPU, fetch and
# checksum CIFAR-10 if it is missing, and train the default small ViT.
#
#   bash vit/scripts/train.sh                         # the default recipe
#   bash vit/scripts/train.sh --preset quick          # any `patchgrad train` flags pass through
#   PATCHGRAD_DATA=DIR bash vit/scripts/train.sh                # data already on disk in DIR
#
# Without --data or PATCHGRAD_DATA the data lives in data/cifar-10-batches-bin, downloaded by
# datasets/scripts/download_cifar10.sh (official archive, MD5-checked; does nothing if present).
set -euo pipefail
cd "$(dirname "$0")/../.."

source tests/scripts/install_deps.sh
install_missing vit/scripts/train.sh cmake g++ make curl ca-certificates

build=${BUILD_DIR:-build-native}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPATCHGRAD_NATIVE=ON -DPATCHGRAD_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)" --target patchgrad

has_data_flag=false
for arg in "$@"; do
  case "$arg" in --data | --data=*) has_data_flag=true ;; esac
done
if ! $has_data_flag && [ -z "${PATCHGRAD_DATA:-}" ]; then
  bash datasets/scripts/download_cifar10.sh data
fi
exec "$build/patchgrad" train "$@"
