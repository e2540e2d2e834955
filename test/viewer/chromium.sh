# Sourced by the viewer's browser tests: Debian's headless Chromium, found or
# the test skipped (exit 77), and `chrome SIZE ARGS...`, one run of it with a
# fresh user-data-dir under $out, no network, no first-run or sync machinery,
# its messages appended to $out/chromium.log. Needs $out to exist.
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (tools/scripts/install-deps.sh installs it)"
  exit 77
fi

chrome() {
  local size="$1"
  shift
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-default-apps \
    --user-data-dir="$(mktemp -d "$out/chrome.XXXXXX")" --virtual-time-budget=10000 \
    --window-size="$size" "$@" 2>>"$out/chromium.log"
}
