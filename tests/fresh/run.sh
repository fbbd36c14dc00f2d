#!/usr/bin/env bash
# `make demo` and `make test` on a fresh Debian minbase system, run as a new user would, in a Podman container.
#
#   tests/fresh/run.sh bookworm|trixie        (as root; `make fresh` runs both; not part of `make test`)
#
# 1.-2. containers/base-image.sh installs podman, runc and debootstrap on the host if missing and builds the
#    image once and caches it (HETSCHED_FRESH_REBUILD=1 rebuilds): `debootstrap --variant=minbase` from the
#    host's Debian mirror with the release's apt sources and the host's extra CA certificates, imported as
#    localhost/hetsched-fresh:RELEASE; the rootfs tarball is kept in /var/cache/hetsched-fresh.
# 3. Starts a container (privileged: slurmd and `unshare`; the runtime flags SLURM-NOTES names), copies in this
#    repository's HEAD (`git archive`: uncommitted changes are NOT tested) as /work/repo and mounts ../shared
#    read-only beside it, installs only the README's prerequisite (make) and runs `make demo`, then `make test`.
# 4. Writes transcripts to $HETSCHED_FRESH_LOGS/RELEASE-<UTC time>/ (default /var/log/hetsched-fresh) and a
#    summary to tests/fresh/results/RELEASE.txt; removes the container it started (by its name) on exit.
# Exits non-zero when the prerequisite or either command fails. Container processes show in the host's `ps`:
# never count or stop Slurm processes by name.
set -euo pipefail

release=${1:-}
case $release in
  bookworm|trixie) ;;
  *) echo "usage: $0 bookworm|trixie" >&2; exit 2 ;;
esac
[[ $(id -u) == 0 ]] || { echo "$0: run as root (podman, debootstrap)" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
shared=${HETSCHED_FRESH_SHARED:-$repo/../shared}
logs=${HETSCHED_FRESH_LOGS:-/var/log/hetsched-fresh}/$release-$(date -u +%Y%m%dT%H%M%SZ)
test_timeout=${HETSCHED_FRESH_TEST_TIMEOUT:-7200}
image=localhost/hetsched-fresh:$release
name=hetsched-fresh-$release-$$
prerequisite="apt-get update && apt-get install -y make"  # the README's "Two commands" prerequisite
mkdir -p "$logs" "$here/results"

pm() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }
say() { echo "[fresh $release $(date -u +%H:%M:%S)] $*"; }
elapsed() { printf '%dm %02ds' $(($1 / 60)) $(($1 % 60)); }

# --- 1.-2. host tools and the cached minbase image (shared with the container cluster) -----------------------
HETSCHED_BASE_LOG=$logs/debootstrap.log "$repo/containers/base-image.sh" "$release" >/dev/null

# --- 3. the container ----------------------------------------------------------------------------------------
cleanup() { pm rm -f "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
mounts=()
if [[ -d $shared ]]; then mounts=(-v "$(cd "$shared" && pwd):/work/shared:ro"); else say "no $shared: its tests skip"; fi
pm run -d --name "$name" --hostname "fresh-$release" --privileged \
  --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 "${mounts[@]}" "$image" sleep infinity >/dev/null
commit=$(git -C "$repo" log -1 --format='%h %cI %s' HEAD | cut -c1-110)
[[ -z $(git -C "$repo" status --porcelain --untracked-files=no) ]] || say "uncommitted changes are not tested"
git -C "$repo" archive HEAD | pm exec -i "$name" sh -c 'mkdir -p /work/repo && tar -C /work/repo -xf -'

# step NAME TIMEOUT COMMAND: run COMMAND in /work/repo as root's login shell; sets rc_NAME and secs_NAME.
step() {
  local label=$1 limit=$2 cmd=$3 start rc
  say "$cmd (transcript: $logs/$label.log)"
  start=$(date +%s)
  set +e
  timeout "$limit" podman --runtime runc --cgroup-manager cgroupfs exec -w /work/repo "$name" bash -lc "$cmd" \
    >"$logs/$label.log" 2>&1
  rc=$?
  set -e
  printf -v "rc_$label" %d "$rc"
  printf -v "secs_$label" %d $(($(date +%s) - start))
  say "$cmd: exit $rc after $(elapsed $(($(date +%s) - start)))"
}
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
step prerequisite 1800 "$prerequisite"
rc_demo=-1 rc_test=-1 secs_demo=0 secs_test=0
if ((rc_prerequisite == 0)); then
  step demo 3600 "make demo"
  step test "$test_timeout" "make test"
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
inside() { pm exec "$name" bash -lc "$1" 2>/dev/null || echo "(unavailable)"; }
slurm_version=$(inside "SLURM_CONF=/var/lib/hetsched/cluster/etc/slurm.conf sinfo -V")  # the demo's cluster
python_version=$(inside "/work/repo/.venv/bin/python -V")
debian_version=$(inside "cat /etc/debian_version")

# --- 4. summary ----------------------------------------------------------------------------------------------
summary=$here/results/$release.txt
{
  echo "# tests/fresh/run.sh $release: make demo and make test on a fresh Debian minbase container"
  echo "date:        $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit:      $commit"
  echo "release:     $release (Debian $debian_version), image from debootstrap --variant=minbase"
  echo "slurm:       $slurm_version"
  echo "python:      $python_version (.venv made by make from Debian's python3)"
  echo "host load:   $load_start at start, $load_end at end (2 cores, shared)"
  echo
  echo "prerequisite \`$prerequisite\`: exit $rc_prerequisite, $(elapsed "$secs_prerequisite")"
  echo "make demo: exit $rc_demo, $(elapsed "$secs_demo")"
  echo "make test: exit $rc_test, $(elapsed "$secs_test")"
  echo
  echo "## demo jobs (make demo)"
  sed -n '/hetsched cluster demo /,$p' "$logs/demo.log" 2>/dev/null | sed 1d | grep -v '^make' || true
  echo
  echo "## pytest (make test)"
  grep -E '^=+ .*( passed| failed| error| skipped| no tests ran).* =+$' "$logs/test.log" 2>/dev/null | tail -1 || true
  grep -E '^(FAILED|ERROR|SKIPPED) ' "$logs/test.log" 2>/dev/null || true
  echo
  echo "transcripts: $logs"
} >"$summary.tmp"
mv "$summary.tmp" "$summary"
cat "$summary"
((rc_prerequisite == 0 && rc_demo == 0 && rc_test == 0))
