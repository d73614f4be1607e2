#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Fails when a C++ file differs from what clang-format makes of it (.clang-format at the root).
# Fix with: clang-format -i $(find engine app ui plugins tests -name '*.cpp' -o -name '*.h')
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find engine app ui plugins tests -name '*.cpp' -o -name '*.h' -o -name '*.cu' | sort)
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files are formatted"
