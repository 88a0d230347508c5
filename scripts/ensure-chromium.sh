#!/usr/bin/env bash
# Make sure a Chromium exists for the browser tests: Debian's package, never a download of its own.
# The tests use $CHROMIUM_PATH when set, else `chromium` on PATH (Debian's: /usr/bin/chromium).
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ -x "$CHROMIUM_PATH" ]; then exit 0; fi
  echo "CHROMIUM_PATH is $CHROMIUM_PATH, and no executable is there: fix or unset it." >&2
  exit 1
fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests ..."
  export DEBIAN_FRONTEND=noninteractive
  # Wait for another apt or dpkg run instead of failing on its lock.
  apt_options=(-o DPkg::Lock::Timeout=600)
  apt-get "${apt_options[@]}" update -qq
  apt-get "${apt_options[@]}" install -y -qq --no-install-recommends chromium >/dev/null
  if command -v chromium >/dev/null 2>&1; then exit 0; fi
  echo "apt-get installed chromium, yet no chromium is on PATH ($PATH)." >&2
  exit 1
fi

cat >&2 <<'MSG'
The browser tests need Chromium and none was found.
Install it (Debian/Ubuntu: `sudo apt-get install chromium`), or point CHROMIUM_PATH at a
Chromium or Chrome binary, then run `make test` again.
MSG
exit 1
