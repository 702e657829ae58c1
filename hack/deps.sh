#!/usr/bin/env bash
# Installs the system packages some tests need, from Debian's packages. Idempotent: a
# package that is already there is not touched. Needs root (or sudo) for apt-get.
#
#   hack/deps.sh chromium         Debian's chromium, for the headless check of the HTML report
#   hack/deps.sh docker-registry  Debian's docker-registry (CNCF distribution), the real registry the
#                                 image checks are tested against (internal/acceptance). The package
#                                 also installs a system service on :5000; the tests never use it,
#                                 they start their own on a free loopback port.
set -euo pipefail

apt_install() {
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "error: $* is not installed and installing it needs root: run 'apt-get install $*' as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  local apt=("${sudo[@]}" apt-get -y -q -o DPkg::Lock::Timeout=300)
  # An empty or stale package list is refreshed once, then the install is retried.
  if ! "${apt[@]}" install "$@" >&2; then
    "${apt[@]}" update >&2
    "${apt[@]}" install "$@" >&2
  fi
}

case "${1:-}" in
  chromium)
    if ! command -v chromium >/dev/null 2>&1; then
      echo "hack/deps.sh: installing Debian's chromium (once; about a minute)" >&2
      apt_install chromium
    fi
    command -v chromium
    ;;
  docker-registry)
    if ! command -v docker-registry >/dev/null 2>&1; then
      echo "hack/deps.sh: installing Debian's docker-registry (once)" >&2
      apt_install docker-registry
    fi
    command -v docker-registry
    ;;
  *)
    echo "usage: hack/deps.sh chromium|docker-registry" >&2
    exit 2
    ;;
esac
