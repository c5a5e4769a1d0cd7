#!/usr/bin/env bash
# tests/scripts/check_commit_subjects.sh RANGE — commit subjects of at most 72 characters, the
# details in the body (git's convention). A habit before committing and pushing, not a CI step.
#
#   bash tests/scripts/check_commit_subjects.sh origin..HEAD   # the commits not pushed yet
#   bash tests/scripts/check_commit_subjects.sh HEAD~5..HEAD   # the last five
#
# Prints each longer subject as "HASH LENGTH: SUBJECT" and exits 1 if there is any.
set -euo pipefail

limit=72
if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: bash tests/scripts/check_commit_subjects.sh RANGE   (e.g. origin..HEAD, HEAD~5..HEAD)" >&2
  exit 2
fi

# The length in characters, not bytes (a subject may hold an em dash or a ×).
export LC_ALL=C.UTF-8
git log --format=%H "$1" -- >/dev/null || { echo "check_commit_subjects: no such range: $1" >&2; exit 2; }

long=0
count=0
while IFS= read -r -d '' entry; do
  hash=${entry%% *}
  subject=${entry#* }
  count=$((count + 1))
  if ((${#subject} > limit)); then
    echo "${hash:0:12} ${#subject}: $subject"
    long=$((long + 1))
  fi
done < <(git log -z --format='%H %s' "$1" --)

if ((long > 0)); then
  echo "check_commit_subjects: $long of $count subject(s) longer than $limit characters;" \
    "shorten them (git commit --amend, or git rebase -i for older ones) and move the details to the body" >&2
  exit 1
fi
echo "check_commit_subjects: ok ($count commit(s) in $1)"
