#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/format.sh — the C sources in the project's one style (.clang-format, clang-format 14).
#
#   scripts/format.sh           reformat every tracked .c and .h file in place
#   scripts/format.sh --check   change nothing; list the files clang-format would change and the lines
#                               longer than 110 columns (which clang-format leaves alone in comments and
#                               strings), and fail if there are any (scripts/test.sh's "format" stage)
#
# tests/abi/frozen/ is excluded: it is the 0.4.0 header byte for byte, kept as it was released.
set -euo pipefail

check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
    echo "format: $clang_format not found (scripts/deps.sh test installs clang-format)" >&2
    exit 2
fi

mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '^tests/abi/frozen/')

if [ "$check" = 0 ]; then
    printf '%s\0' "${files[@]}" | xargs -0 "$clang_format" -i
    exit 0
fi

status=0
unformatted=$(printf '%s\0' "${files[@]}" | xargs -0 "$clang_format" --dry-run 2>&1 |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: .*code should be clang-formatted.*/\1/p' | sort -u)
if [ -n "$unformatted" ]; then
    echo "format: these files are not as clang-format writes them (run scripts/format.sh):"
    echo "$unformatted" | sed 's/^/  /'
    status=1
fi
# Characters, not bytes (the comments hold UTF-8: mawk's length would count bytes).
long=$(perl -CSD -ne 'chomp; printf "  %s:%d: %d columns\n", $ARGV, $., length if length > 110; close ARGV if eof' \
    "${files[@]}")
if [ -n "$long" ]; then
    echo "format: lines over 110 columns (.clang-format's ColumnLimit):"
    echo "$long"
    status=1
fi
[ "$status" = 0 ] && echo "format: ${#files[@]} files, all formatted, no line over 110 columns"
exit "$status"
