#!/usr/bin/env bash
# tests/scripts/check_prose.sh — the text a reader sees describes the project as it is now.
# Scans README.md, tests/README.md, every Markdown file under tutorials/ and every file under
# autograd layers vit datasets tutorials/tools tutorials/scripts tests (tracked, or new and not
# ignored; binary files skipped) for issue numbers, the word session(s), paths outside the
# repository, ISO dates and history wording ("first version", "earlier version", "before X was
# the default").
# CHANGELOG.md is not scanned: its dates belong there.
#
#   bash tests/scripts/check_prose.sh    # prints each hit as FILE:LINE: TEXT; exit 1 if any
#
# A hit that is a real use (an ssh session, a test of a checker that must hold such a string)
# goes into tests/scripts/prose_allow.txt, whose top says how. This script and that list name
# the patterns themselves and are not scanned. CI runs this check (.ci/run, "prose").
set -euo pipefail
cd "$(dirname "$0")/../.."

self=tests/scripts/check_prose.sh
allow_file=tests/scripts/prose_allow.txt

# One extended regular expression, matched case-insensitively.
patterns=(
  'issue [0-9]+'
  '\bsessions?\b'
  '\.\./shared'
  '\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b'
  'first version'
  'earlier version'
  'before .* was the (default|preset)'
)
regex=$(IFS='|'; echo "${patterns[*]}")

# The allow-list: "PATH:REGEX" lines, PATH a glob over repository paths, REGEX an extended
# regular expression (bash =~, case-sensitive) the hit's line must match.
allow_paths=()
allow_regexes=()
allow_used=()
if [ -f "$allow_file" ]; then
  while IFS= read -r entry || [ -n "$entry" ]; do
    case "$entry" in '' | '#'*) continue ;; esac
    if [[ "$entry" != *:* ]]; then
      echo "$allow_file: not PATH:REGEX: $entry" >&2
      exit 2
    fi
    allow_paths+=("${entry%%:*}")
    allow_regexes+=("${entry#*:}")
    allow_used+=(0)
  done < "$allow_file"
fi

# The files: from git where this is a checkout, else (an unpacked archive) from the tree.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- \
      README.md tests/README.md 'tutorials/*.md' autograd layers vit datasets tutorials/tools tutorials/scripts tests
  else
    find README.md tests/README.md -maxdepth 0 -type f -print0 2>/dev/null || true
    find tutorials -name '*.md' -type f -print0
    find autograd layers vit datasets tutorials/tools tutorials/scripts tests -type f -print0
  fi
}
files=()
while IFS= read -r -d '' file; do
  [ -f "$file" ] || continue  # deleted from the work tree, not yet from the index
  case "$file" in "$self" | "$allow_file" | CHANGELOG.md) continue ;; esac
  files+=("$file")
done < <(list_files | sort -zu)

if ((${#files[@]} == 0)); then
  echo "check_prose: no files to scan (run it in a git checkout of patchgrad)" >&2
  exit 2
fi

hits=0
allowed=0
while IFS= read -r hit; do
  # grep -n -H: FILE:LINE:TEXT (repository paths hold no colon).
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  text=${rest#*:}
  ok=0
  for i in "${!allow_paths[@]}"; do
    # shellcheck disable=SC2053  # the allow-list's path is a glob on purpose
    if [[ "$file" == ${allow_paths[$i]} && "$text" =~ ${allow_regexes[$i]} ]]; then
      ok=1
      allow_used[i]=1
      break
    fi
  done
  if ((ok)); then
    allowed=$((allowed + 1))
  else
    echo "$file:$line: $text"
    hits=$((hits + 1))
  fi
done < <(grep -n -H -I -i -E -- "$regex" "${files[@]}" || true)

for i in "${!allow_paths[@]}"; do
  if ((allow_used[i] == 0)); then
    echo "note: $allow_file: ${allow_paths[$i]}:${allow_regexes[$i]} matches nothing; remove it" >&2
  fi
done

if ((hits > 0)); then
  echo "check_prose: $hits line(s) with an issue number, a session, a date, a path outside the" \
    "repository or history wording (${#files[@]} files; $allowed allowed by $allow_file)" >&2
  exit 1
fi
echo "check_prose: ok (${#files[@]} files, $allowed allowed line(s))"
