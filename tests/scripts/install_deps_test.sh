#!/usr/bin/env bash
# tests/scripts/install_deps_test.sh — install_missing (install_deps.sh) installs what is
# missing and nothing else: with Catch2's header present it stays quiet and never calls
# apt-get; with it absent it installs catch2. apt-get and sudo are stand-ins that log their
# arguments, so nothing is installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/scripts/install_deps.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
for stand_in in apt-get sudo; do
  printf '#!/usr/bin/env bash\necho "%s $*" >> "%s/calls"\n[ "%s" = sudo ] && exec "$@"\nexit 0\n' \
    "$stand_in" "$tmp" "$stand_in" > "$tmp/bin/$stand_in"
  chmod +x "$tmp/bin/$stand_in"
done
PATH="$tmp/bin:$PATH"
fail() { echo "install_deps_test: $*" >&2; exit 1; }

any_exists "$tmp/none" "$tmp/bin/apt-get" || fail "any_exists: a list with one existing file is not found"
! any_exists "$tmp/none" "$tmp/neither" || fail "any_exists: a list without an existing file is found"

touch "$tmp/catch_all.hpp"
catch2_headers=("$tmp/catch.hpp" "$tmp/catch_all.hpp")  # only the second exists
out=$(install_missing test catch2 2>&1)
[ -z "$out" ] || fail "Catch2 present, yet: $out"
[ ! -e "$tmp/calls" ] || fail "Catch2 present, yet apt-get ran: $(cat "$tmp/calls")"

catch2_headers=("$tmp/catch.hpp")
out=$(install_missing test catch2 2>&1)
[[ "$out" == *"test: installing catch2"* ]] || fail "Catch2 absent, the message was: $out"
grep -q "apt-get install -y --no-install-recommends catch2" "$tmp/calls" || fail "no apt-get install: $(cat "$tmp/calls")"
echo "install_deps_test: ok"
