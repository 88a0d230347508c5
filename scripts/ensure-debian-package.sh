#!/usr/bin/env bash
# ensure-debian-package.sh COMMAND PACKAGE PURPOSE: make sure COMMAND is on PATH, installing
# Debian's PACKAGE as root when it is not (never a download of its own). Without root it says
# how to install it, and fails.
set -euo pipefail
command_name=$1 package=$2 purpose=$3

if command -v "$command_name" >/dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's $package for $purpose ..."
  export DEBIAN_FRONTEND=noninteractive
  # Wait for another apt or dpkg run instead of failing on its lock.
  apt_options=(-o DPkg::Lock::Timeout=600)
  apt-get "${apt_options[@]}" update -qq
  apt-get "${apt_options[@]}" install -y -qq --no-install-recommends "$package" >/dev/null
  if command -v "$command_name" >/dev/null 2>&1; then exit 0; fi
  echo "apt-get installed $package, yet no $command_name is on PATH ($PATH)." >&2
  exit 1
fi

echo "No $command_name was found; it is needed for $purpose." >&2
echo "Install it (Debian/Ubuntu: \`sudo apt-get install $package\`), then run \`make test\` again." >&2
exit 1
