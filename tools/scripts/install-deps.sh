#!/usr/bin/env bash
# Installs what building and testing need on Debian 12, only what is missing.
# Extra Debian package names given as arguments are installed too, when missing
# (run-tests.sh adds the fuzzing toolchain this way).
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config binutils
          libelfin-dev libfmt-dev libboost-program-options-dev zlib1g-dev libzstd-dev dwz libevent-dev libgtest-dev googletest "$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The Rust integration test needs cargo; a rustup install counts.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  missing+=(cargo)
fi

# The viewer is built with node/npm (any install on PATH counts, e.g. nodesource
# or nvm) and tested in Debian's headless chromium.
if ! command -v node >/dev/null 2>&1 && ! command -v nodejs >/dev/null 2>&1; then
  missing+=(nodejs)
fi
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

# The export tests (test/exports): Coz's JSON Lines read with python3's json
# module, and `coz report --pprof` loaded by `go tool pprof`. Any Go counts:
# on PATH, or an official tarball's /usr/local/go/bin (the test looks there too).
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
  missing+=(golang-go)
fi

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "Installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
