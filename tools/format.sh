#!/usr/bin/env bash
# clang-format over the project's C++ sources (.clang-format at the root).
#
#   bash tools/format.sh           format every file in place
#   bash tools/format.sh --check   list the files that differ from .clang-format; exit 1 if any
#
# Files: the *.cpp, *.hpp, *.h that git tracks or would track (so build folders, out/ and other
# ignored or generated files are never touched), or, outside a git checkout, every such file
# outside build*/ and out/. CLANG_FORMAT names the binary (default clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: bash tools/format.sh [--check]" >&2; exit 2 ;;
esac

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "format: $CLANG_FORMAT not found (Debian: apt-get install clang-format)" >&2
  exit 2
fi

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do
    [ -f "$f" ] && files+=("$f")
  done < <(git ls-files -z --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h')
else
  while IFS= read -r -d '' f; do
    files+=("${f#./}")
  done < <(find . \( -path './build*' -o -path './out' -o -path './.git' \) -prune -o \
                -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print0 | sort -z)
fi

if [ "$check" -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -r -n 16 "$CLANG_FORMAT" -i --style=file
  echo "format: ${#files[@]} files formatted with $("$CLANG_FORMAT" --version)"
  exit 0
fi

# Each file checked on its own (in parallel); the list is sorted so the output is stable.
mapfile -t differ < <(printf '%s\0' "${files[@]}" |
  xargs -0 -r -P "$(nproc)" -I{} sh -c '"$0" --style=file --dry-run --Werror "$1" >/dev/null 2>&1 || echo "$1"' \
        "$CLANG_FORMAT" {} | LC_ALL=C sort)
if [ ${#differ[@]} -gt 0 ]; then
  printf '%s\n' "${differ[@]}"
  echo "format: ${#differ[@]} of ${#files[@]} files differ from .clang-format" \
       "(bash tools/format.sh to format them)" >&2
  exit 1
fi
echo "format: all ${#files[@]} files match .clang-format"
