#!/usr/bin/env bash
# The Debian package, end to end on this machine: `cmake --build BUILD --target package` makes
# qrel_<version>_<arch>.deb; lintian finds no error; its files, conffiles and Depends (each shared
# library the binaries need, by the package that ships it) are right; `apt-get install ./….deb`
# runs the postinst (system user qrel, the unit enabled the way deb-systemd-helper does it, no
# running systemd needed); `systemd-analyze verify` accepts the installed unit and
# `systemd-analyze security` scores it; the installed binary, started as the unit starts it (its
# User, ExecStart with ARGS from /etc/default/qrel-exporter, no capability, no new privileges),
# serves /metrics and a landing page that says the configuration watches nothing yet and what to
# do; `dpkg -r` keeps only the conffiles and `dpkg -P` leaves nothing but the qrel user, as policy
# allows. Package size and install/remove times are printed.
#
# Safe on a developer machine and in CI, as root: one run at a time per machine (a lock), it
# refuses to touch a qrel package it did not install, and on any exit it purges the package and
# deletes the qrel user if that user did not exist before. On a machine where systemd runs, the
# postinst also starts the service (on :19318, as after a real install) until the purge.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

[ "$(id -u)" -eq 0 ] || { echo "package.sh installs and removes a package: run it as root" >&2; exit 1; }
for tool in cmake dpkg-deb dpkg-shlibdeps lintian systemd-analyze setpriv apt-get readelf flock curl; do
  command -v "$tool" >/dev/null || { echo "$tool missing (scripts/deps.sh installs it)" >&2; exit 1; }
done

# dpkg and the package name are machine-wide: engineers' test runs take turns.
exec 9>/run/lock/qrel-package-test.lock
flock -w 600 9 || { echo "another package.sh run held the lock for 10 minutes" >&2; exit 1; }
if dpkg-query -W -f='${Status}' qrel 2>/dev/null | grep -qv 'not-installed'; then
  echo "a qrel package is already on this machine ($(dpkg-query -W -f='${Version}: ${Status}' qrel));" \
    "this test installs and purges qrel, so it leaves that one alone" >&2
  exit 1
fi
user_existed=0
getent passwd qrel >/dev/null && user_existed=1
RUN_PID=""

dpkg_wait() { # dpkg ARGS, waiting while another apt or dpkg holds the dpkg lock
  local _
  for _ in $(seq 1 90); do
    if dpkg "$@" >"$T/dpkg.out" 2>"$T/dpkg.err"; then return 0; fi
    grep -qi 'lock' "$T/dpkg.err" || { cat "$T/dpkg.out" "$T/dpkg.err" >&2; return 1; }
    sleep 2
  done
  return 1
}
installed() { dpkg-query -W -f='${Status}' qrel 2>/dev/null | grep -qv 'not-installed'; }
restore() {
  if [ -n "$RUN_PID" ]; then kill "$RUN_PID" 2>/dev/null || true; wait "$RUN_PID" 2>/dev/null || true; fi
  if installed; then dpkg_wait -P qrel || echo "restore: dpkg -P qrel failed" >&2; fi
  if [ "$user_existed" = 0 ] && getent passwd qrel >/dev/null; then
    userdel qrel 2>/dev/null || echo "restore: userdel qrel failed" >&2
  fi
  if [ "$user_existed" = 0 ] && getent group qrel >/dev/null; then groupdel qrel 2>/dev/null || true; fi
}
trap 'rc=$?; restore; (exit $rc); cleanup' EXIT

secs_since() { echo "scale=2; ($(now_ms) - $1) / 1000" | bc; }

# --- build --------------------------------------------------------------------------------------
version=$("$EXPORTER" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
deb=$QREL_BUILD_DIR/qrel_${version}_${arch}.deb
rm -f "$deb"
t0=$(now_ms)
if cmake --build "$QREL_BUILD_DIR" --target package >"$T/cpack.log" 2>&1; then
  ok "cmake --build --target package ($(secs_since "$t0") s)"
else
  not_ok "cmake --build --target package"; tail -20 "$T/cpack.log" >&2; finish; exit 1
fi
expect_cmd "it made $(basename "$deb")" test -s "$deb"
echo "package size: $(stat -c %s "$deb") bytes; Installed-Size: $(dpkg-deb -f "$deb" Installed-Size) KiB"

# --- lintian ------------------------------------------------------------------------------------
if lintian --fail-on error "$deb" >"$T/lintian.out" 2>&1; then
  ok "lintian: no error ($(grep -c '^W:' "$T/lintian.out" || true) warnings)"
else
  not_ok "lintian: errors"; cat "$T/lintian.out" >&2
fi
grep -E '^[EW]:' "$T/lintian.out" || true

# --- files, conffiles, control fields -----------------------------------------------------------
dpkg-deb -c "$deb" >"$T/contents"
awk '{print $6}' "$T/contents" | sed 's|^\./|/|' >"$T/paths"
for f in /usr/bin/qrel /usr/bin/qrel_exporter /lib/systemd/system/qrel-exporter.service \
  /lib/systemd/system/qrel-exporter.socket \
  /etc/default/qrel-exporter /etc/qrel/qrel.yml /usr/share/man/man1/qrel.1.gz \
  /usr/share/man/man1/qrel_exporter.1.gz /usr/share/qrel/alerts/qrel-alerts.yml \
  /usr/share/doc/qrel/copyright /usr/share/doc/qrel/changelog.gz \
  /usr/share/doc/qrel/examples/qrel.example.yml; do
  expect_cmd "the package has $f" grep -qxF "$f" "$T/paths"
done
expect_eq "every dashboard is in /usr/share/qrel/dashboards" \
  "$(grep -c '^/usr/share/qrel/dashboards/.*\.json$' "$T/paths")" \
  "$(find "$QREL_SOURCE_DIR/dashboards" -maxdepth 1 -name '*.json' | wc -l)"
expect_eq "every alert test is in /usr/share/qrel/alerts/tests" \
  "$(grep -c '^/usr/share/qrel/alerts/tests/.*\.yml$' "$T/paths")" \
  "$(find "$QREL_SOURCE_DIR/alerts/tests" -maxdepth 1 -name '*.yml' | wc -l)"
expect_eq "nothing outside /etc, /lib/systemd and /usr" \
  "$(grep -vE '^/(etc|lib|lib/systemd|lib/systemd/system|usr)(/|$)' "$T/paths" | grep -v '^/$' || true)" ""
expect_eq "every file is root:root" "$(awk '$2 != "root/root"' "$T/contents")" ""
dpkg-deb -e "$deb" "$T/control"
expect_eq "conffiles" "$(cat "$T/control/conffiles")" "/etc/default/qrel-exporter
/etc/qrel/qrel.yml"
for s in postinst prerm postrm; do
  expect_eq "$s is 0755" "$(stat -c %a "$T/control/$s")" 755
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# Each library the binaries are linked against, by the package that ships it, is in Depends.
ldconfig -p >"$T/ldconfig"
for bin in qrel qrel_exporter; do
  readelf -d "$QREL_BUILD_DIR/$bin" | sed -nE "s/.*\(NEEDED\).*\[(.*)\]/$bin \1/p"
done >"$T/needed"
# dpkg knows a library by the path its package installed: the link ldconfig names, or (with /usr
# merged) the file it points to. One dpkg -S for all of them: each call reads dpkg's whole file
# list (0.3 s here), and there are some forty paths.
while read -r bin soname; do
  path=$(awk -v s="$soname" '$1 == s {print $NF; exit}' "$T/ldconfig")
  printf '%s %s %s %s\n' "$bin" "$soname" "$path" "$(readlink -f "$path")"
done <"$T/needed" >"$T/paths_of"
awk '{print $3; print $4}' "$T/paths_of" | sort -u | xargs dpkg -S >"$T/owners" 2>/dev/null || true
owner() { awk -v p="$1" '{f = $0; sub(/^[^ ]+ /, "", f)} f == p {sub(/:.*/, "", $1); print $1; exit}' "$T/owners"; }
while read -r bin soname path real; do
  pkg=$(owner "$path")
  [ -n "$pkg" ] || pkg=$(owner "$real")
  [ -n "$pkg" ] || { not_ok "dpkg -S finds the package of $soname ($path)"; continue; }
  expect_cmd "Depends names $pkg ($bin needs $soname)" grep -qE "(^|, )$pkg( |,|$)" <<<"$depends"
done <"$T/paths_of"
expect_eq "every library a binary needs was looked up" "$(wc -l <"$T/paths_of")" "$(wc -l <"$T/needed")"
expect_cmd "Depends names adduser (the postinst uses it)" grep -qE '(^|, )adduser(,|$)' <<<"$depends"

# --- install: postinst --------------------------------------------------------------------------
t0=$(now_ms)
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=180 "$deb" \
  >"$T/apt.log" 2>&1; then
  ok "apt-get install ./$(basename "$deb") ($(secs_since "$t0") s)"
else
  not_ok "apt-get install"; tail -20 "$T/apt.log" >&2; finish; exit 1
fi
expect_eq "dpkg says installed" "$(dpkg-query -W -f='${Status}' qrel)" "install ok installed"
expect_eq "dpkg knows the conffiles" "$(dpkg-query -W -f='${Conffiles}\n' qrel | awk 'NF {print $1}')" \
  "/etc/default/qrel-exporter
/etc/qrel/qrel.yml"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd qrel)
expect_between "postinst made qrel a system user (uid $uid)" "$uid" 100 999
expect_eq "its home" "$home" /nonexistent
expect_eq "its shell" "$shell" /usr/sbin/nologin
expect_eq "its own group" "$(id -gn qrel)" qrel
wants=/etc/systemd/system/multi-user.target.wants/qrel-exporter.service
expect_eq "postinst enabled the unit" "$(readlink "$wants")" /lib/systemd/system/qrel-exporter.service
expect_eq "man finds qrel_exporter(1)" "$(man -w qrel_exporter 2>/dev/null)" \
  /usr/share/man/man1/qrel_exporter.1.gz
expect_cmd "postinst configure again (an upgrade, a reconfigure) succeeds" \
  /var/lib/dpkg/info/qrel.postinst configure "$version"

# --- the unit -----------------------------------------------------------------------------------
unit=/lib/systemd/system/qrel-exporter.service
if systemd-analyze verify "$unit" >"$T/verify.out" 2>&1; then
  ok "systemd-analyze verify $unit"
else
  not_ok "systemd-analyze verify"; cat "$T/verify.out" >&2
fi
# The socket unit too (socket activation, --web.systemd-socket): it names the service.
if systemd-analyze verify "${unit%.service}.socket" >"$T/verify.out" 2>&1; then
  ok "systemd-analyze verify ${unit%.service}.socket"
else
  not_ok "systemd-analyze verify the socket unit"; cat "$T/verify.out" >&2
fi
expect_cmd "the socket unit starts the service" grep -qxF Service=qrel-exporter.service "${unit%.service}.socket"
systemd-analyze security --offline=yes "$unit" >"$T/security.out" 2>&1 || true
score=$(sed -nE 's/.*Overall exposure level for .*: ([0-9.]+) .*/\1/p' "$T/security.out")
echo "systemd-analyze security: exposure $score (0 safest, 10 unprotected)"
expect_cmd "exposure $score is at most 2.0 (OK)" test "$(echo "${score:-10} <= 2.0" | bc)" -eq 1
for setting in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
  CapabilityBoundingSet= ReadOnlyPaths=-/etc/qrel User=qrel EnvironmentFile=-/etc/default/qrel-exporter; do
  expect_cmd "the unit sets $setting" grep -qxF "$setting" "$unit"
done

# --- run the installed binary as the unit runs it ----------------------------------------------
user=$(sed -n 's/^User=//p' "$unit")
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
args=$(env -i sh -c 'set -a; . /etc/default/qrel-exporter; printf %s "$ARGS"')
cmdline=${exec_start//\$ARGS/$args}
expect_eq "ExecStart with ARGS" "$cmdline" "/usr/bin/qrel_exporter --config.file=/etc/qrel/qrel.yml"
port=$(free_port)
# systemd splits $ARGS on whitespace: so does the unquoted expansion here.
# shellcheck disable=SC2086
(cd / && exec env -i PATH=/usr/bin:/bin setpriv --reuid="$user" --regid="$user" --init-groups \
  --no-new-privs --inh-caps=-all --bounding-set=-all -- \
  $cmdline --web.listen-address="127.0.0.1:$port") 2>"$T/service.log" &
RUN_PID=$!
PIDS+=("$RUN_PID")
up=0
for _ in $(seq 1 100); do
  if curl -fs "http://127.0.0.1:$port/-/healthy" >/dev/null; then up=1; break; fi
  sleep 0.05
done
expect_eq "the installed exporter answers /-/healthy" "$up" 1
expect_eq "it runs as $user" "$(ps -o user= -p "$RUN_PID" | tr -d ' ')" "$user"
expect_eq "with no capability" "$(awk '/^CapEff/ {print $2}' "/proc/$RUN_PID/status")" 0000000000000000
curl -fsS "http://127.0.0.1:$port/metrics" -o "$T/metrics" || true
expect_metric "$T/metrics" 1 qrel_config_last_reload_successful
expect_cmd "/metrics has qrel_build_info of version $version" grep -qE "^qrel_build_info\{version=\"$version\"" "$T/metrics"
expect_eq "no source is collected" "$(grep -c '^qrel_collector_up' "$T/metrics" || true)" 0
curl -fsS "http://127.0.0.1:$port/" -o "$T/landing.html" || true
expect_cmd "the landing page says nothing is watched yet" grep -qF 'id="no-sources">No sources are configured' "$T/landing.html"
expect_cmd "it names the file to edit" grep -qF '<code>/etc/qrel/qrel.yml</code>' "$T/landing.html"
expect_cmd "and how to reload" grep -qF 'systemctl reload qrel-exporter' "$T/landing.html"
expect_cmd "the log warns that no source is configured, naming the file" \
  grep -qE 'level=warn msg="no sources configured.*file=/etc/qrel/qrel.yml' "$T/service.log"
kill -HUP "$RUN_PID" # ExecReload
for _ in $(seq 1 50); do grep -q 'configuration reloaded' "$T/service.log" && break; sleep 0.05; done
expect_cmd "SIGHUP (ExecReload) reloads" grep -q 'msg="configuration reloaded" file=/etc/qrel/qrel.yml' "$T/service.log"
kill -TERM "$RUN_PID"
rc=0; wait "$RUN_PID" || rc=$?
RUN_PID=""
expect_eq "SIGTERM stops it with status 0" "$rc" 0
expect_eq "qrel_exporter --config.check on the packaged file" \
  "$(setpriv --reuid="$user" --regid="$user" --init-groups /usr/bin/qrel_exporter --config.check \
    --config.file=/etc/qrel/qrel.yml 2>&1)" "/etc/qrel/qrel.yml: OK, 0 sources"
if command -v promtool >/dev/null; then
  expect_cmd "promtool test rules passes on the installed rules" \
    promtool test rules /usr/share/qrel/alerts/tests/*.yml
fi

# --- remove and purge ---------------------------------------------------------------------------
dpkg-query -L qrel >"$T/owned"
t0=$(now_ms)
if dpkg_wait -r qrel; then ok "dpkg -r qrel ($(secs_since "$t0") s)"; else not_ok "dpkg -r qrel"; fi
expect_eq "after -r: config-files" "$(dpkg-query -W -f='${Status}' qrel)" "deinstall ok config-files"
expect_cmd "the programs are gone" test ! -e /usr/bin/qrel_exporter -a ! -e /usr/bin/qrel
expect_cmd "the unit is gone" test ! -e "$unit"
expect_cmd "the conffiles stay" test -f /etc/qrel/qrel.yml -a -f /etc/default/qrel-exporter
t0=$(now_ms)
if dpkg_wait -P qrel; then ok "dpkg -P qrel ($(secs_since "$t0") s)"; else not_ok "dpkg -P qrel"; fi
expect_cmd "after -P dpkg no longer knows qrel" sh -c '! dpkg-query -W -f="\${Status}" qrel 2>/dev/null | grep -qv not-installed'
left=""
while read -r p; do
  # Directories shared with other packages (/usr/bin, /etc/default, ...) stay, as they should;
  # ours must go.
  if [ -e "$p" ] && [ ! -d "$p" ]; then left="$left $p"; fi
  case $p in /etc/qrel | /usr/share/qrel* | /usr/share/doc/qrel*) [ -e "$p" ] && left="$left $p" ;; esac
done <"$T/owned"
expect_eq "no file of the package is left" "$left" ""
expect_cmd "the enable symlink is gone" test ! -e "$wants" -a ! -L "$wants"
expect_eq "deb-systemd-helper's state is gone" \
  "$(find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked \
      -name 'qrel-exporter*' 2>/dev/null)" ""
expect_eq "nothing named qrel left in /etc, /lib/systemd, /usr, /var/lib" \
  "$(find /etc /lib/systemd /usr/bin /usr/share /var/lib/dpkg/info /var/lib/systemd \
      -name '*qrel*' 2>/dev/null)" ""
expect_cmd "the qrel user stays after purge (Debian leaves system users)" getent passwd qrel
finish
