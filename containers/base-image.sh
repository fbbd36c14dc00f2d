#!/usr/bin/env bash
# The Debian minbase base image of a release, built once and cached (shared by tests/fresh/run.sh and the
# container cluster's Containerfile):
#
#   containers/base-image.sh bookworm|trixie      (as root) prints the image name, localhost/hetsched-fresh:RELEASE
#
# Installs podman, runc and debootstrap on the host if missing. `debootstrap --variant=minbase` from the host's
# Debian mirror, the release's main/-updates/-security apt sources, and the host's extra CA certificates in
# /usr/local/share/ca-certificates (a TLS-intercepting proxy's; the `ca-certificates` package picks them up).
# The rootfs tarball is kept in $HETSCHED_FRESH_CACHE (default /var/cache/hetsched-fresh);
# HETSCHED_FRESH_REBUILD=1 rebuilds. Progress goes to stderr, the debootstrap log to $HETSCHED_BASE_LOG.
set -euo pipefail

release=${1:-}
[[ $release == bookworm || $release == trixie ]] || { echo "usage: $0 bookworm|trixie (as root)" >&2; exit 2; }
((EUID == 0)) || { echo "$0: run as root (podman, debootstrap)" >&2; exit 2; }
cache=${HETSCHED_FRESH_CACHE:-/var/cache/hetsched-fresh}
log=${HETSCHED_BASE_LOG:-$cache/debootstrap-$release.log}
image=localhost/hetsched-fresh:$release
pm() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }
say() { echo "[base-image $release $(date -u +%H:%M:%S)] $*" >&2; }

need=()
for tool in podman runc debootstrap; do command -v "$tool" >/dev/null || need+=("$tool"); done
if ((${#need[@]})); then
  say "apt-get install ${need[*]} (host)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The host's mirrors (deb822 or one-line sources), else Debian's own.
host_uris() { cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
  | grep -oE 'https?://[^ ]*/debian(-security)?/?( |$)' | tr -d ' ' | sed 's#/$##' | sort -u || true; }
mirror=$(host_uris | grep -v -- '-security$' | head -1 || true); mirror=${mirror:-http://deb.debian.org/debian}
security=$(host_uris | grep -- '-security$' | head -1 || true)
security=${security:-http://deb.debian.org/debian-security}
tarball=$cache/$release.tar
mkdir -p "$cache" "$(dirname "$log")"
if [[ ! -s $tarball || -n ${HETSCHED_FRESH_REBUILD:-} ]]; then
  rootfs=$cache/$release.rootfs
  say "debootstrap --variant=minbase $release from $mirror (log: $log)"
  rm -rf "$rootfs"
  debootstrap --variant=minbase "$release" "$rootfs" "$mirror" >"$log" 2>&1
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $release $release-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $release-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
  tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball" && rm -rf "$rootfs"
  pm rmi -f "$image" >/dev/null 2>&1 || true
fi
if ! pm image exists "$image"; then
  say "podman import $tarball $image"
  pm import --quiet "$tarball" "$image" >/dev/null
fi
echo "$image"
