#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Renders the icon's PNG sizes (hicolor/<N>x<N>/apps) from org.nnstudio.NNStudio.svg with
# rsvg-convert (Debian's librsvg2-bin). The PNGs are committed: run this after changing the SVG.
set -euo pipefail
cd "$(dirname "$0")"
for n in 16 24 32 48 64 128 256 512; do
  rsvg-convert -w "$n" -h "$n" org.nnstudio.NNStudio.svg -o "org.nnstudio.NNStudio-$n.png"
done
