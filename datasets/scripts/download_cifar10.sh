#!/usr/bin/env bash
# datasets/scripts/download_cifar10.sh [DEST_DIR] — fetch CIFAR-10 (binary version) into
# DEST_DIR/cifar-10-batches-bin (DEST_DIR defaults to data/, so the result is where
# patchgrad looks by default: data/cifar-10-batches-bin, relative to the current directory).
#
#   - Downloads https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz (162 MiB) with
#     curl -C - (or wget -c): an interrupted download resumes from DEST_DIR/*.part when run again.
#   - Verifies its MD5 (c32a1d4ab5d03f1284b67883e8d87530) before extracting, with md5sum
#     (Linux), md5 (macOS) or openssl, whichever is there; on a mismatch it deletes the
#     download and exits non-zero, leaving no files behind.
#   - Extracts into a temporary directory inside DEST_DIR and moves the finished folder into
#     place, so DEST_DIR/cifar-10-batches-bin is never half-extracted.
#   - Is idempotent: if the six .bin files are already there with 30,730,000 bytes each, it
#     prints "already present" and exits 0 without touching the network. An incomplete copy
#     is replaced, but a DEST_DIR/cifar-10-batches-bin holding any other file is left alone
#     (the script stops and names the file).
#
# No internet? Any directory holding data_batch_1..5.bin and test_batch.bin works: point
# patchgrad at it with --data DIR or PATCHGRAD_DATA=DIR, or copy the files into
# data/cifar-10-batches-bin.
#
# For tests, the environment may override the source and the expected sizes:
#   PATCHGRAD_CIFAR_URL        archive URL (file:// works with curl)
#   PATCHGRAD_CIFAR_MD5        its expected MD5
#   PATCHGRAD_CIFAR_BIN_BYTES  expected size of each .bin file (default 30730000)
set -euo pipefail

url=${PATCHGRAD_CIFAR_URL:-https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz}
md5=${PATCHGRAD_CIFAR_MD5:-c32a1d4ab5d03f1284b67883e8d87530}
bin_bytes=${PATCHGRAD_CIFAR_BIN_BYTES:-30730000}
dest_root=${1:-data}
dest=$dest_root/cifar-10-batches-bin
files=(data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin)
me=download_cifar10.sh

die() {
  echo "$me: $*" >&2
  exit 1
}

# True if every .bin file is in $1 with the expected size.
complete() {
  local f size
  for f in "${files[@]}"; do
    [ -f "$1/$f" ] || return 1
    size=$(wc -c <"$1/$f")
    [ "$size" -eq "$bin_bytes" ] || return 1
  done
}

if complete "$dest"; then
  echo "$me: CIFAR-10 already present in $dest"
  exit 0
fi
# An incomplete copy in $dest is replaced below; anything else there is the user's and stays.
if [ -e "$dest" ]; then
  [ -d "$dest" ] || die "$dest is not a folder: move it away or give another DEST_DIR"
  for f in "$dest"/* "$dest"/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    case ${f##*/} in
      data_batch_[1-5].bin | test_batch.bin | batches.meta.txt | readme.html) ;;
      *) die "$dest holds ${f##*/}, which is not a CIFAR-10 file: move it away or give another DEST_DIR" ;;
    esac
  done
fi

command -v tar >/dev/null || die "needs 'tar', which is not installed"
# The MD5 tool: Linux has md5sum, macOS has md5, and openssl is nearly everywhere.
md5_tool=""
for tool in md5sum md5 openssl; do
  if command -v "$tool" >/dev/null; then
    md5_tool=$tool
    break
  fi
done
[ -n "$md5_tool" ] || die "needs md5sum, md5 or openssl to check the download, and none is installed"

# The MD5 of file $1, in hex (md5 -q prints the hash alone; openssl -r prints "hash *file",
# as md5sum does).
md5_of() {
  case $md5_tool in
    md5sum) md5sum "$1" | cut -d' ' -f1 ;;
    md5) md5 -q "$1" ;;
    openssl) openssl dgst -md5 -r "$1" | cut -d' ' -f1 ;;
  esac
}

created_root=0
if [ ! -d "$dest_root" ]; then
  mkdir -p "$dest_root" || die "cannot create $dest_root"
  created_root=1
fi
archive=$dest_root/cifar-10-binary.tar.gz
partial=$archive.part
tmp=""
# On any failure: no temporary directory, no empty DEST_DIR we made. A .part download is kept
# so the next run resumes it, unless it was found to be corrupt (removed below).
cleanup() {
  [ -z "$tmp" ] || rm -rf "$tmp"
  [ "$created_root" = 0 ] || rmdir "$dest_root" 2>/dev/null || true
}
trap cleanup EXIT

if [ ! -f "$archive" ]; then
  echo "$me: downloading $url"
  if command -v curl >/dev/null; then
    curl -fL --retry 3 -C - -o "$partial" "$url" || die "download of $url failed (run again to resume)"
  elif command -v wget >/dev/null; then
    wget -c -O "$partial" "$url" || die "download of $url failed (run again to resume)"
  else
    die "needs curl or wget to download $url"
  fi
  mv "$partial" "$archive"
fi

actual=$(md5_of "$archive") || die "cannot compute the MD5 of $archive"
if [ "$actual" != "$md5" ]; then
  rm -f "$archive" "$partial"
  die "$archive has MD5 $actual, expected $md5 (corrupt or wrong download; removed it, run again)"
fi

tmp=$(mktemp -d "$dest_root/.cifar-10-extract.XXXXXX")
tar -xzf "$archive" -C "$tmp" || die "cannot extract $archive"
complete "$tmp/cifar-10-batches-bin" ||
  die "$archive does not hold cifar-10-batches-bin/ with the six .bin files of $bin_bytes bytes each"
rm -rf "$dest"
mv "$tmp/cifar-10-batches-bin" "$dest"
rm -f "$archive"
created_root=0
echo "$me: CIFAR-10 is in $dest"
