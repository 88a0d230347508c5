#!/usr/bin/env bash
# Make sure bubblewrap exists for the sandboxed command tools (shell, python) and their tests:
# Debian's package, as root. Without root it says how to get it: the app still runs, with the
# command tools not offered (the startup line and the form say why).
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's bubblewrap for the command sandbox ..."
  export DEBIAN_FRONTEND=noninteractive
  # Wait for another apt or dpkg run instead of failing on its lock.
  apt_options=(-o DPkg::Lock::Timeout=600)
  apt-get "${apt_options[@]}" update -qq
  apt-get "${apt_options[@]}" install -y -qq --no-install-recommends bubblewrap >/dev/null
  if command -v bwrap >/dev/null 2>&1; then exit 0; fi
  echo "apt-get installed bubblewrap, yet no bwrap is on PATH ($PATH)." >&2
  exit 1
fi

cat >&2 <<'MSG'
The command sandbox needs bubblewrap and none was found.
Install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`), then run `make test` again.
MSG
exit 1
