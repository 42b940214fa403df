#!/usr/bin/env bash
# Checks that every tracked C++/CUDA source follows .clang-format. Layouts differ between
# clang-format releases, so the check runs with the release the project formats with (14, Debian's
# clang-format package) and is skipped (exit 77) without it, never judged by another one.
# Usage: tests/format_check.sh SOURCE_DIR   (fix a failure: clang-format-14 -i FILE...)
set -euo pipefail
cd "$1"
formatter=""
for candidate in clang-format-14 clang-format; do
  if command -v "$candidate" >/dev/null &&
     "$candidate" --version | grep -q "version 14\."; then
    formatter=$candidate
    break
  fi
done
if [[ -z "$formatter" ]]; then
  echo "skipped: clang-format 14 is not installed (apt-get install clang-format)"
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find kernels lib tools tests -name '*.cpp' -o -name '*.h' -o -name '*.cu' \
                         -o -name '*.cuh' | sort)
fi
if ((${#files[@]} == 0)); then
  echo "no C++ or CUDA sources found under $1" >&2
  exit 1
fi
bad=()
for f in "${files[@]}"; do
  "$formatter" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "${#bad[@]} of ${#files[@]} sources differ from .clang-format ($formatter -i FILE fixes one):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "${#files[@]} sources follow .clang-format"
