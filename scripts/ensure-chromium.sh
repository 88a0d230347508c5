#!/usr/bin/env bash
# Make sure a Chromium exists for the browser tests: Debian's package, never a download of its own.
# The tests use $CHROMIUM_PATH when set, else `chromium` on PATH (Debian's: /usr/bin/chromium).
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ -x "$CHROMIUM_PATH" ]; then exit 0; fi
  echo "CHROMIUM_PATH is $CHROMIUM_PATH, and no executable is there: fix or unset it." >&2
  exit 1
fi
if ! "$(dirname "$0")/ensure-debian-package.sh" chromium chromium "the browser tests"; then
  echo "Or point CHROMIUM_PATH at a Chromium or Chrome binary." >&2
  exit 1
fi
