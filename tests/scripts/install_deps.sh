# tests/scripts/install_deps.sh — sourced by tests/scripts/run.sh and vit/scripts/train.sh.
# shellcheck shell=bash
#
#   install_missing WHO TOOL...   installs each missing TOOL (a command name, "catch2", or
#                                 "ca-certificates") with apt-get, or tells the user what to
#                                 install and exits.

# Where Catch2 may be: Debian 12's v2, then v3 from a distribution (Ubuntu 24.04), /usr/local and
# Homebrew on Apple Silicon. Any one of them will do.
catch2_headers=(/usr/include/catch2/catch.hpp /usr/include/catch2/catch_all.hpp
  /usr/local/include/catch2/catch_all.hpp /opt/homebrew/include/catch2/catch_all.hpp)

# Whether any of the files named exists. (Not `ls a b c`: it fails when any one is missing.)
any_exists() {
  local file
  for file in "$@"; do [ -e "$file" ] && return 0; done
  return 1
}

install_missing() {
  local who=$1
  shift
  local missing=() tool
  for tool in "$@"; do
    if [ "$tool" = catch2 ]; then
      any_exists "${catch2_headers[@]}" || missing+=(catch2)
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
