#!/usr/bin/env bash
# Installs what simd-attention needs on a fresh Debian bookworm machine (as root).
# Idempotent: a second run installs nothing and takes well under 2 s.
#
#   scripts/setup.sh               # everything
#   SA_SETUP_SKIP_APT=1 scripts/setup.sh   # skip the Debian package step
#
# Steps: 1. Debian packages  2. xsimd 13 headers from trixie into .deps/xsimd
#        3. emcc check (see scripts/env.sh)  4. npm deps (the root's, tests/bundlers')
#        5. .gitignore entries
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { echo "setup: $*"; }
TMPS=()
cleanup() { [ ${#TMPS[@]} -eq 0 ] || rm -rf "${TMPS[@]}"; }
trap cleanup EXIT
die() { echo "setup: ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# 1. Debian packages
# ---------------------------------------------------------------------------
APT_PKGS=(emscripten node-acorn binaryen libhwy-dev cmake g++ libgtest-dev
          libgmock-dev googletest libbenchmark-dev nlohmann-json3-dev chromium
          clang libclang-rt-14-dev)

step_apt() {
  if [ "${SA_SETUP_SKIP_APT:-0}" = 1 ]; then
    say "apt skipped (SA_SETUP_SKIP_APT=1)"
    return
  fi
  local missing=() p
  for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "apt ok"
    return
  fi
  say "apt installing: ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  say "apt ok (installed ${missing[*]})"
}

# ---------------------------------------------------------------------------
# 2. xsimd 13.x (header-only) from Debian trixie -> .deps/xsimd
#    Uses a private apt state under build/apt-trixie/; the system's apt
#    sources, lists and dpkg status are never touched.
# ---------------------------------------------------------------------------
XSIMD_PREFIX="$ROOT/.deps/xsimd"
XSIMD_WANT_MAJOR=13

# Prints "MAJOR.MINOR.PATCH" of the xsimd tree rooted at $1 (the dir holding xsimd/).
xsimd_version() {
  local cfg="$1/xsimd/config/xsimd_config.hpp" maj min pat
  [ -f "$cfg" ] || return 1
  maj=$(sed -n 's/^#define XSIMD_VERSION_MAJOR \([0-9]*\).*/\1/p' "$cfg")
  min=$(sed -n 's/^#define XSIMD_VERSION_MINOR \([0-9]*\).*/\1/p' "$cfg")
  pat=$(sed -n 's/^#define XSIMD_VERSION_PATCH \([0-9]*\).*/\1/p' "$cfg")
  [ -n "$maj" ] || return 1
  echo "$maj.${min:-0}.${pat:-0}"
}

# The URI the system uses for bookworm's main archive (same host for trixie).
debian_mirror() {
  local uri=""
  if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
    # deb822: first stanza with Types: deb whose Suites contain exactly "bookworm".
    uri=$(awk '
      function flush() { if (deb && suite && u != "" && !found) { print u; found = 1 } deb = suite = 0; u = "" }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      tolower($1) == "types:"  { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      tolower($1) == "uris:"   { u = $2 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
      END { flush() }' /etc/apt/sources.list.d/*.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    # one-line format: deb [opts] URI bookworm comps...
    uri=$(sed -n 's/^[ \t]*deb[ \t]\+\(\[[^]]*\][ \t]\+\)\?\([^ \t]\+\)[ \t]\+bookworm[ \t].*/\2/p' \
            /etc/apt/sources.list | head -n1)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

step_xsimd() {
  local have
  if [ -f "$XSIMD_PREFIX/include/xsimd/xsimd.hpp" ] &&
     have=$(xsimd_version "$XSIMD_PREFIX/include") && [ "${have%%.*}" = "$XSIMD_WANT_MAJOR" ]; then
    say "xsimd $have ok"
    return
  fi

  local adir="$ROOT/build/apt-trixie" mirror arch
  mirror="$(debian_mirror)"
  arch="$(dpkg --print-architecture)"
  rm -rf "$adir"
  mkdir -p "$adir/lists/partial" "$adir/cache/archives/partial"
  : > "$adir/status"   # empty dpkg status: apt sees nothing installed
  local APTOPT=(
    -o "Dir::Etc::SourceList=$adir/sources.list"
    -o Dir::Etc::SourceParts=/dev/null
    -o Dir::Etc::Preferences=/dev/null
    -o Dir::Etc::PreferencesParts=/dev/null
    -o "Dir::State::Lists=$adir/lists"
    -o "Dir::Cache=$adir/cache"
    -o "Dir::State::Status=$adir/status"
    -o "APT::Architecture=$arch"
    -o Acquire::Languages=none
  )

  # Signature verification. bookworm's debian-archive-keyring (>= 2023.3+deb12u1)
  # already carries the trixie archive and release keys, both in the combined
  # /usr/share/keyrings/debian-archive-keyring.gpg and as separate
  # debian-archive-trixie-*.gpg files, so a signed-by keyring normally works.
  # Try those in order; only if none verifies trixie's InRelease (an older
  # keyring package) fall back to [trusted=yes]: the download is still over
  # the same mirror the system already trusts for bookworm, and it is only
  # header files extracted into the build tree, never installed with dpkg.
  local candidates=() k
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] &&
    candidates+=(/usr/share/keyrings/debian-archive-keyring.gpg)
  local trixie_gpg=(/usr/share/keyrings/debian-archive-trixie-*.gpg)
  [ -e "${trixie_gpg[0]}" ] && candidates+=("$(IFS=,; echo "${trixie_gpg[*]}")")
  local trixie_asc=(/etc/apt/trusted.gpg.d/debian-archive-trixie-*.asc)
  [ -e "${trixie_asc[0]}" ] && candidates+=("$(IFS=,; echo "${trixie_asc[*]}")")
  candidates+=(TRUSTED)

  local how="" log="$adir/update.log"
  for k in "${candidates[@]}"; do
    if [ "$k" = TRUSTED ]; then
      echo "deb [trusted=yes] $mirror trixie main" > "$adir/sources.list"
    else
      echo "deb [signed-by=$k] $mirror trixie main" > "$adir/sources.list"
    fi
    rm -rf "$adir/lists"; mkdir -p "$adir/lists/partial"
    if apt-get "${APTOPT[@]}" -q --error-on=any update >"$log" 2>&1; then
      how="$k"; break
    fi
    # Only a signature problem is worth retrying with another keyring.
    grep -Eqi 'NO_PUBKEY|GPG error|not signed|EXPKEYSIG|signatures? (were|was) invalid|OpenPGP' "$log" || {
      cat "$log" >&2; die "apt-get update for trixie failed (see above; $log)"; }
  done
  [ -n "$how" ] || { cat "$log" >&2; die "could not fetch trixie package lists ($log)"; }
  [ "$how" = TRUSTED ] && say "xsimd: WARNING no keyring verifies trixie, used [trusted=yes]"

  local tmp; tmp="$(mktemp -d)"; TMPS+=("$tmp")
  # let apt's _apt sandbox user write the .deb (avoids the "unsandboxed" warning)
  id _apt >/dev/null 2>&1 && chown _apt "$tmp"
  ( cd "$tmp" && apt-get "${APTOPT[@]}" -q download libxsimd-dev >"$adir/download.log" 2>&1 ) || {
    cat "$adir/download.log" >&2; die "apt-get download libxsimd-dev (trixie) failed"; }
  local deb; deb=$(find "$tmp" -maxdepth 1 -name 'libxsimd-dev_*.deb' | head -n1)
  [ -n "$deb" ] || die "libxsimd-dev .deb not found after download"
  local debver; debver=$(dpkg-deb -f "$deb" Version)
  mkdir -p "$tmp/x"
  dpkg -x "$deb" "$tmp/x"
  [ -f "$tmp/x/usr/include/xsimd/xsimd.hpp" ] || die "$(basename "$deb") has no usr/include/xsimd/xsimd.hpp"
  have=$(xsimd_version "$tmp/x/usr/include") || die "cannot read XSIMD_VERSION_* from $(basename "$deb")"
  [ "${have%%.*}" = "$XSIMD_WANT_MAJOR" ] ||
    die "trixie's libxsimd-dev is xsimd $have ($debver), need $XSIMD_WANT_MAJOR.x; update scripts/setup.sh"

  # Stage next to the destination, then swap in, so an interrupted run never
  # leaves a half-copied tree that the fast path above would accept.
  local stage="$XSIMD_PREFIX.new"
  rm -rf "$stage"
  mkdir -p "$stage/include"
  cp -a "$tmp/x/usr/include/xsimd" "$stage/include/xsimd"
  # Debian's usr/share/cmake/xsimd is deliberately not copied: it was built
  # with xsimd_ENABLE_XTL_COMPLEX, so find_package(xsimd) requires xtl and adds
  # -DXSIMD_ENABLE_XTL_COMPLEX=1. Use the include dir directly instead.
  [ -f "$tmp/x/usr/share/doc/libxsimd-dev/copyright" ] &&
    cp "$tmp/x/usr/share/doc/libxsimd-dev/copyright" "$stage/copyright"
  echo "libxsimd-dev $debver (Debian trixie, $mirror)" > "$stage/VERSION"
  rm -rf "$XSIMD_PREFIX"
  mv "$stage" "$XSIMD_PREFIX"
  say "xsimd $have ok (installed libxsimd-dev $debver into .deps/xsimd)"
}

# ---------------------------------------------------------------------------
# 3. Emscripten: env comes from scripts/env.sh (sourced, nothing global).
# ---------------------------------------------------------------------------
emcc_short() { grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+' <<<"$1" | head -n1; }

step_emcc() {
  # shellcheck source=scripts/env.sh
  . "$ROOT/scripts/env.sh"
  command -v emcc >/dev/null || die "emcc not found (is the emscripten package installed?)"
  local ver
  ver=$(emcc --version 2>&1) || die "emcc --version failed: $ver"
  ver=$(echo "$ver" | head -n1)
  local marker="$ROOT/build/.emcc-smoke-ok" sig
  sig="$ver | node $(node --version)"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$sig" ]; then
    say "emcc $(emcc_short "$ver") ok"
    return
  fi
  local tmp; tmp="$(mktemp -d)"; TMPS+=("$tmp")
  cat > "$tmp/x.c" <<'EOF'
#include <stdio.h>
#include <wasm_simd128.h>
int main(void) {
  v128_t a = wasm_f32x4_splat(1.5f);
  printf("%g\n", wasm_f32x4_extract_lane(wasm_f32x4_add(a, a), 0));
  return 0;
}
EOF
  # -O2 exercises the acorn JS optimizer (needs NODE_PATH from env.sh).
  # -sWASM_ASYNC_COMPILATION=0: emscripten 3.1.6's default async loader calls
  # Node 18+'s global fetch() on a file path and dies with "Failed to parse
  # URL from .../x.wasm"; see the note in scripts/env.sh for the options.
  (cd "$tmp" && emcc -O2 -msimd128 -sWASM_ASYNC_COMPILATION=0 x.c -o x.js) >"$tmp/log" 2>&1 || {
    cat "$tmp/log" >&2; die "emcc smoke test failed to compile (source scripts/env.sh?)"; }
  local out; out=$(cd "$tmp" && node x.js 2>&1) || { echo "$out" >&2; die "emcc smoke test: node x.js failed"; }
  [ "$out" = 3 ] || die "emcc smoke test printed '$out', expected 3"
  mkdir -p "$ROOT/build"
  echo "$sig" > "$marker"
  say "emcc $(emcc_short "$ver") ok (smoke test passed)"
}

# ---------------------------------------------------------------------------
# 4. npm dependencies
# ---------------------------------------------------------------------------
# $1: a folder with a package.json: the root, or a test project that keeps its
# large dependencies out of the root's (tests/bundlers: Vite, webpack).
step_npm() {
  local dir="$1" label=npm
  [ "$dir" = . ] || label="npm ($dir)"
  if [ ! -f "$dir/package.json" ]; then
    say "$label ok (no package.json yet)"
    return
  fi
  # Up to date when the reference file is newer than the lock (or package.json
  # when there is no lock). Reference = npm's own node_modules/.package-lock.json;
  # a package with nothing to install gets no node_modules at all, so then the
  # reference is our stamp in build/.
  local stamp="$ROOT/build/.npm-installed"
  [ "$dir" = . ] || stamp="$stamp-${dir//\//-}"
  local want="$dir/package.json" ref="$dir/node_modules/.package-lock.json" empty=0
  if [ -f "$dir/package-lock.json" ]; then
    want="$dir/package-lock.json"
    grep -q '"node_modules/' "$want" || empty=1
  else
    (cd "$dir" && node -e 'const p=require("./package.json");
      process.exit(["dependencies","devDependencies","optionalDependencies"]
        .some(k => p[k] && Object.keys(p[k]).length) ? 1 : 0)') && empty=1
  fi
  [ "$empty" = 1 ] && ref="$stamp"
  if [ -f "$ref" ] && [ ! "$ref" -ot "$want" ]; then
    say "$label ok"
    return
  fi
  if [ -f "$dir/package-lock.json" ]; then
    say "$label: npm ci"
    (cd "$dir" && npm ci --no-audit --no-fund)
  else
    say "$label: npm install"
    (cd "$dir" && npm install --no-audit --no-fund)
  fi
  # npm may write package-lock.json after node_modules/.package-lock.json;
  # touch the references so the next run does not redo the install.
  mkdir -p "$ROOT/build"
  touch "$stamp"
  [ -f "$dir/node_modules/.package-lock.json" ] && touch "$dir/node_modules/.package-lock.json"
  say "$label ok (installed)"
}

# ---------------------------------------------------------------------------
# 5. .gitignore (append only what is missing)
# ---------------------------------------------------------------------------
step_gitignore() {
  local added=() e base
  touch .gitignore
  for e in build/ node_modules/ .deps/ '*.tgz'; do
    base="${e%/}"
    # accept equivalent spellings: build, build/, /build, /build/
    if ! grep -qxF -e "$base" -e "$base/" -e "/$base" -e "/$base/" .gitignore; then
      [ -s .gitignore ] && [ "$(tail -c1 .gitignore)" != "" ] && echo >> .gitignore
      echo "$e" >> .gitignore
      added+=("$e")
    fi
  done
  if [ ${#added[@]} -eq 0 ]; then say "gitignore ok"; else say "gitignore ok (added ${added[*]})"; fi
}

step_apt
step_xsimd
step_emcc
step_npm .
step_npm tests/bundlers
step_npm tests/types
step_npm tests/fuzz/js
step_gitignore
