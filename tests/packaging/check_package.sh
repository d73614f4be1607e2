#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian package end to end (ctest packaging.deb): CPack builds it from this build tree,
# lintian, desktop-file-validate and appstreamcli check it, and the package extracted into a
# scratch root (dpkg -x) works: its programs run from there, its CLI trains an installed
# example, its MIME type and desktop entry register, its man pages open and its bash completion
# completes.
#
#   check_package.sh BUILD WORK VERSION
#
# Needs lintian, desktop-file-utils, appstream, man-db and bash-completion (packaging/setup.sh
# --tests installs them); without them it is skipped (exit 77), except in CI (CI set), where
# it fails.
set -euo pipefail
build=$1 work=$2 version=$3
app=org.nnstudio.NNStudio

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $*"; }

for tool in cpack lintian desktop-file-validate appstreamcli update-mime-database \
  update-desktop-database man dpkg-deb; do
  if ! command -v "$tool" >/dev/null; then
    echo "$tool is not installed (packaging/setup.sh --tests installs it)" >&2
    exit "$([[ -n ${CI:-} ]] && echo 1 || echo 77)"
  fi
done
[[ -f /usr/share/bash-completion/bash_completion ]] || fail "bash-completion is not installed"

rm -rf "$work"
mkdir -p "$work"

step "cpack"
cpack --config "$build/CPackConfig.cmake" -B "$work" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack could not build the package"; }
deb=$work/nnstudio_${version}_amd64.deb
[[ -f $deb ]] || fail "cpack did not write $deb: $(ls "$work")"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
# dpkg-shlibdeps computed the dependencies from the binaries' libraries.
depends=$(dpkg-deb --field "$deb" Depends)
for lib in libc6 libstdc++6 libqt6widgets6 libopenblas0 libsqlite3-0 libgvc6 libonnx1; do
  [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done

step "lintian"
# Errors fail the check; the warnings are listed (the package is built by CPack, not
# debhelper). The package's own overrides (no contact address yet) are in
# packaging/debian/lintian-overrides.
lintian --fail-on error --no-tag-display-limit "$deb" | tee "$work/lintian.log" ||
  fail "lintian found errors (above)"

step "extract into a scratch root"
root=$work/root
dpkg -x "$deb" "$root"
share=$root/usr/share
libdirs=("$root"/usr/lib/*/nnstudio)
libdir=${libdirs[0]#"$root/usr/lib/"}
for f in usr/bin/nnstudio usr/bin/nnstudio-cli \
  "usr/lib/$libdir/libnnstudio-engine.so.$version" \
  "usr/lib/$libdir/plugins/rmsnorm.so" "usr/lib/$libdir/plugins/fourier_features.so" \
  usr/include/nnstudio/engine/plugin/plugin.h \
  "usr/lib/${libdir%/nnstudio}/cmake/NNStudio/NNStudioConfig.cmake" \
  usr/share/nnstudio/examples/spirals.nns usr/share/nnstudio/examples/digits.nns \
  usr/share/nnstudio/plugin-template/learned_scale.cpp \
  "usr/share/applications/$app.desktop" "usr/share/metainfo/$app.metainfo.xml" \
  "usr/share/mime/packages/$app.xml" "usr/share/icons/hicolor/scalable/apps/$app.svg" \
  "usr/share/icons/hicolor/48x48/apps/$app.png" "usr/share/icons/hicolor/512x512/apps/$app.png" \
  usr/share/man/man1/nnstudio.1.gz usr/share/man/man1/nnstudio-cli.1.gz \
  usr/share/bash-completion/completions/nnstudio-cli \
  usr/share/doc/nnstudio/copyright usr/share/doc/nnstudio/changelog.gz; do
  [[ -e $root/$f ]] || fail "the package lacks /$f"
done

step "licence"
# GPL-3.0-or-later (QCustomPlot, which the window links, is GPL-3.0), the same in the
# copyright file and the metainfo.
grep -qx 'License: GPL-3+' "$root/usr/share/doc/nnstudio/copyright" ||
  fail "the copyright file does not license the package under GPL-3+"
grep -q '<project_license>GPL-3.0-or-later</project_license>' \
  "$share/metainfo/$app.metainfo.xml" || fail "the metainfo's project_license is not GPL-3.0-or-later"

step "desktop entry and metainfo"
desktop-file-validate "$share/applications/$app.desktop" || fail "desktop-file-validate"
appstreamcli validate --no-net "$share/metainfo/$app.metainfo.xml" || fail "appstreamcli validate"

step "the MIME type and the desktop entry register (what a double-click goes by)"
update-mime-database "$share/mime"
grep -qx 'application/x-nnstudio-project:org.nnstudio.NNStudio' "$share/mime/icons" ||
  fail "the MIME type has no icon: $(cat "$share/mime/icons")"
grep -q 'application/x-nnstudio-project:\*\.nns' "$share/mime/globs2" ||
  fail "*.nns is not application/x-nnstudio-project"
update-desktop-database "$share/applications"
grep -qx "application/x-nnstudio-project=$app.desktop;" "$share/applications/mimeinfo.cache" ||
  fail "the desktop entry does not open .nns files: $(cat "$share/applications/mimeinfo.cache")"

step "the installed programs"
cli=$root/usr/bin/nnstudio-cli
# (Outputs are read whole before matching: `cmd | grep -q` fails under pipefail when grep
# stops reading early and cmd gets SIGPIPE.)
libraries=$(ldd "$cli")
[[ $libraries == *"=> $root/usr/bin/../lib/$libdir/libnnstudio-engine.so"* ]] ||
  fail "nnstudio-cli does not use the package's engine library: $libraries"
[[ $("$cli" --version) == "nnstudio-cli $version" ]] || fail "nnstudio-cli --version: $("$cli" --version)"
gui_version=$(env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/nnstudio" --version)
[[ $gui_version == "nnstudio $version" ]] || fail "nnstudio --version: $gui_version"
gui_help=$(env -u DISPLAY -u WAYLAND_DISPLAY "$root/usr/bin/nnstudio" --help)
[[ $gui_help == "Usage: nnstudio "* ]] || fail "nnstudio --help prints no usage: $gui_help"
# Only the package's plugins: an empty data folder and no NNS_PLUGIN_PATH.
export XDG_DATA_HOME=$work/data NNSTUDIO_RUNS_DIR=$work/runs
unset NNS_PLUGIN_PATH
plugins=$("$cli" plugins)
echo "$plugins"
[[ $plugins == *"$root/usr/lib/$libdir/plugins/rmsnorm.so"* && $plugins != *Failed:* ]] ||
  fail "the installed plugins do not load"
"$cli" train "$share/nnstudio/examples/spirals.nns" --epochs 3 | tee "$work/train.log"
grep -q 'epoch   3/3' "$work/train.log" || fail "the installed CLI did not train 3 epochs"
grep -q 'test: loss [0-9.]* accuracy' "$work/train.log" || fail "no test result"

step "man pages"
for page in nnstudio-cli nnstudio; do
  text=$(MANWIDTH=100 man -M "$share/man" "$page" 2>&1) || fail "man $page: $text"
  [[ $text == *"$page $version"* || $text == *"$version"* ]] || fail "man $page has no version"
done
text=$(MANWIDTH=100 man -M "$share/man" nnstudio-cli)
[[ $text == *"nnstudio-cli train PROJECT [options]"* ]] || fail "man nnstudio-cli lacks the train command"

step "bash completion"
completions=$(PATH=$root/usr/bin:$PATH bash -c '
  source /usr/share/bash-completion/bash_completion
  source "$1"
  complete_line() {
    COMP_LINE=$1 COMP_POINT=${#1}
    read -ra COMP_WORDS <<<"$COMP_LINE"
    [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMPREPLY=()
    _nnstudio_cli
    echo "${COMPREPLY[*]}"
  }
  complete_line "nnstudio-cli tr"
  complete_line "nnstudio-cli train --snap"
  complete_line "nnstudio-cli runs --del"
' _ "$share/bash-completion/completions/nnstudio-cli")
echo "$completions"
[[ $completions == $'train\n--snapshot-every\n--delete' ]] || fail "bash completion: $completions"

echo "package check passed: $deb"
