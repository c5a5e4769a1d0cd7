# tests/scripts/install_deps.sh — sourced by tests/scripts/run.sh and vit/scripts/train.sh.
# shellcheck shell=bash
#
#   install_missing WHO TOOL...   installs each missing TOOL (a command name, "catch2", or
#                                 "ca-certificates") with apt-get, or tells the user what to
#                                 install and exits.
install_missing() {
  local who=$1
  shift
  local missing=() tool
  for tool in "$@"; do
    if [ "$tool" = catch2 ]; then
      ls /usr/include/catch2/catch.hpp /usr/include/catch2/catch_all.hpp \
        /usr/local/include/catch2/catch_all.hpp /opt/homebrew/include/catch2/catch_all.hpp >/dev/null 2>&1 ||
        missing+=(catch2)
    elif [ "$tool" = ca-certificates ]; then
      # curl's https needs them. Debian's curl only recommends them, so --no-install-recommends
      # leaves them out on a minimal system; elsewhere (macOS) the system keeps its own.
      if command -v apt-get >/dev/null && [ ! -e /etc/ssl/certs/ca-certificates.crt ]; then
        missing+=(ca-certificates)
      fi
    else
      command -v "$tool" >/dev/null || missing+=("$tool")
    fi
  done
  ((${#missing[@]})) || return 0
  if command -v apt-get >/dev/null; then
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "$who: installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "$who: please install ${missing[*]} (e.g. 'brew install cmake catch2')" >&2
    exit 1
  fi
}
