#!/usr/bin/env bash
# Builds the Debian package (CPU build, see cmake/Packaging.cmake), then checks it on this machine
# as an administrator would use it, and leaves the machine as it was:
#   - its dependencies are Debian library packages, never -dev ones;
#   - it installs with apt (which fetches what it depends on);
#   - the installed ddprun --version and ddprund --version agree with the package's version, the
#     network launcher ddprun runs is in /usr/libexec/ddprun, and a short job runs;
#   - ddprund starts from the installed configuration file; the unit passes systemd-analyze
#     verify where that exists; the system user exists;
#   - purging it removes every file it installed, configuration included.
# Needs root (or sudo). Usage: packaging/check_deb.sh [BUILD_DIR] (default build-deb).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-deb}
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
fail() { echo "check_deb: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if dpkg-query -W -f='${Status}' ddprun 2>/dev/null | grep -q "install ok installed"; then
  fail "a ddprun package is installed already; remove it first (dpkg -P ddprun)"
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DDDPRUN_WITH_CUDA=OFF -DBUILD_TESTING=OFF -DDDPRUN_WERROR=ON >/dev/null
cmake --build "$build" --target ddprun ddprund ddprun_runtime_shared
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/ddprun_*.deb)
version=$(dpkg-deb -f "$deb" Version)
depends=$(dpkg-deb -f "$deb" Depends)
echo "check_deb: $deb, version $version"
echo "check_deb: Depends: $depends"
if grep -q -- "-dev" <<<"$depends"; then fail "the package depends on a -dev package"; fi
grep -q "libgrpc++" <<<"$depends" || fail "the package does not depend on gRPC's library package"

trap 'as_root dpkg -P ddprun >/dev/null 2>&1 || true' EXIT
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$(realpath "$deb")" >/dev/null
files=$(dpkg -L ddprun)

[ "$(/usr/bin/ddprun --version)" = "ddprun $version" ] ||
  fail "installed ddprun --version says '$(/usr/bin/ddprun --version)', the package $version"
[ "$(/usr/bin/ddprund --version)" = "ddprund $version" ] ||
  fail "installed ddprund --version says '$(/usr/bin/ddprund --version)', the package $version"
[ -x /usr/libexec/ddprun/ddprun ] ||
  fail "the package has no network launcher, /usr/libexec/ddprun/ddprun, which ddprun runs"
job=$(/usr/bin/ddprun --standalone --nproc_per_node=2 /bin/sh -c 'echo "rank $RANK of $WORLD_SIZE"')
grep -q "^\[rank1\]: rank 1 of 2$" <<<"$job" || fail "the short job printed: $job"
grep -q "/libddprun_runtime.so" <<<"$files" || fail "the package has no runtime library"
getent passwd ddprun >/dev/null || fail "postinst did not create the system user ddprun"

# The daemon with the installed configuration (on a free port instead of the configured one);
# its first line says it listens.
coproc DAEMON { exec /usr/bin/ddprund --config=/etc/ddprun/ddprund.conf --port=0; }
daemon=$DAEMON_PID
read -r -t 10 listening <&"${DAEMON[0]}" || listening=""
grep -q "^ddprund listening on 127.0.0.1:" <<<"$listening" ||
  { kill "$daemon"; fail "ddprund did not start from /etc/ddprun/ddprund.conf"; }
kill -TERM "$daemon"
wait "$daemon" || fail "ddprund did not stop cleanly on SIGTERM"

if command -v systemd-analyze >/dev/null; then
  verdict=$(systemd-analyze verify /usr/lib/systemd/system/ddprund.service 2>&1) ||
    fail "systemd-analyze verify failed: $verdict"
  [ -z "$verdict" ] || fail "systemd-analyze verify warned: $verdict"
  # An instance's name for the template unit, in a folder of its own, removed right after.
  unit_dir=$(mktemp -d)
  cp /usr/lib/systemd/system/ddprund@.service "$unit_dir/ddprund@daemon.service"
  verified=0
  verdict=$(systemd-analyze verify "$unit_dir/ddprund@daemon.service" 2>&1) || verified=$?
  rm -rf "$unit_dir"
  [ "$verified" -eq 0 ] || fail "systemd-analyze verify of ddprund@.service failed: $verdict"
  [ -z "$verdict" ] || fail "systemd-analyze verify of ddprund@.service warned: $verdict"
fi

as_root dpkg -P ddprun >/dev/null
trap - EXIT
while read -r path; do
  if [ -f "$path" ] || [ -L "$path" ]; then fail "$path is still there after purging"; fi
done <<<"$files"
[ ! -e /etc/ddprun ] || fail "/etc/ddprun is still there after purging"
echo "check_deb: ok (installed, ran, purged)"
