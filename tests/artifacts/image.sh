#!/usr/bin/env bash
# The container image (scripts/build-image.sh, the `image` target): built here with mmdebstrap,
# umoci and skopeo, no daemon and no registry; its configuration (a non-root user, the entry point
# and command, port 19318, the OCI labels) is what the Dockerfile sets, so the two stay equivalent;
# the image, unpacked, holds the package and only what it needs (no shell, no package
# manager, every file root's); and qrel_exporter run from it, as the image's user with the image's
# entry point, on a read-only root with a tmpfs /tmp, scrapes a loopback redis-server.
# As root (mmdebstrap --mode=root, chroot, mount namespace); prints the seconds each part took.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

[ "$(id -u)" -eq 0 ] || { echo "image.sh builds a root file system and chroots: run it as root" >&2; exit 1; }
for tool in mmdebstrap umoci skopeo jq unshare chroot curl redis-server; do
  command -v "$tool" >/dev/null || { echo "$tool missing (scripts/deps.sh installs it)" >&2; exit 1; }
done
secs_since() { echo "scale=1; ($(now_ms) - $1) / 1000" | bc; }

version=$("$EXPORTER" --version | awk '{print $2}')
revision=$(git -C "$QREL_SOURCE_DIR" rev-parse HEAD 2>/dev/null || echo unknown)
archive=$T/image/qrel_exporter-$version.docker.tar
t0=$(now_ms)
if bash "$QREL_SOURCE_DIR/scripts/build-image.sh" "$QREL_BUILD_DIR" "$T/image" >"$T/build-image.log" 2>&1; then
  ok "scripts/build-image.sh ($(secs_since "$t0") s: $(grep -o 'mmdebstrap: [0-9]* s' "$T/build-image.log"))"
else
  not_ok "scripts/build-image.sh"; tail -20 "$T/build-image.log" >&2; finish; exit 1
fi
echo "docker archive: $(stat -c %s "$archive") bytes"

# --- the configuration, and the Dockerfile's --------------------------------------------------
skopeo inspect --config "docker-archive:$archive" >"$T/archive-config.json"
jq -S .config "$T/archive-config.json" >"$T/config.json"
cfg() { jq -c "$1" "$T/config.json"; }
expect_eq "the user is 65532:65532, not root" "$(cfg .User)" '"65532:65532"'
expect_eq "the entry point" "$(cfg .Entrypoint)" '["/usr/bin/qrel_exporter"]'
expect_eq "the command: the config from the mounted file" "$(cfg .Cmd)" '["--config.file=/etc/qrel/qrel.yml"]'
expect_eq "EXPOSE 19318/tcp, the default port" "$(cfg '.ExposedPorts | keys')" '["19318/tcp"]'
expect_eq "label version" "$(cfg '.Labels."org.opencontainers.image.version"')" "\"$version\""
expect_eq "label revision (the commit)" "$(cfg '.Labels."org.opencontainers.image.revision"')" "\"$revision\""
# skopeo writes the name in full; docker load and Kubernetes read qrel/qrel_exporter as the same.
expect_eq "the docker archive names it qrel/qrel_exporter:$version, as deploy/kubernetes does" \
  "$(tar -xOf "$archive" manifest.json | jq -c '.[0].RepoTags')" "[\"docker.io/qrel/qrel_exporter:$version\"]"
expect_cmd "deploy/kubernetes/base names that image" \
  grep -qE '^ *- name: qrel/qrel_exporter$' "$QREL_SOURCE_DIR/deploy/kubernetes/base/kustomization.yaml"
# The Dockerfile (built with docker elsewhere) sets the same: compared key by key, drift fails.
"$QREL_PYTHON" "$QREL_SOURCE_DIR/tests/lib/dockerfile_config.py" "$QREL_SOURCE_DIR/Dockerfile" \
  "VERSION=$version" "REVISION=$revision" >"$T/dockerfile.json"
for key in User WorkingDir Entrypoint Cmd ExposedPorts Labels; do
  expect_eq "the Dockerfile's $key is the image's" "$(jq -cS ".$key" "$T/dockerfile.json")" "$(cfg ".$key")"
done
expect_cmd "the Dockerfile starts FROM debian:bookworm-slim"
# The tree checked and run below is unpacked from the OCI layout: the archive holds its layer.
expect_eq "the docker archive's layer is the OCI layout's" \
  "$(skopeo inspect --config "oci:$T/image/oci:$version" | jq -c .rootfs.diff_ids)" \
  "$(jq -c .rootfs.diff_ids "$T/archive-config.json")" grep -qx 'FROM debian:bookworm-slim' "$QREL_SOURCE_DIR/Dockerfile"

# --- unpacked: what it holds -----------------------------------------------------------------
t0=$(now_ms)
# From the OCI layout the archive was copied from (skopeo copies the blobs as they are; a round
# trip through the archive only cost time).
umoci unpack --image "$T/image/oci:$version" "$T/bundle" >"$T/umoci.log"
root=$T/bundle/rootfs
ok "unpacked ($(secs_since "$t0") s, $(du -sm "$root" | cut -f1) MiB)"
for f in /usr/bin/qrel_exporter /usr/bin/qrel /etc/qrel/qrel.yml /etc/ssl/certs/ca-certificates.crt; do
  expect_cmd "the image has $f" test -s "$root$f"
done
expect_cmd "the CA bundle holds certificates" grep -q 'BEGIN CERTIFICATE' "$root/etc/ssl/certs/ca-certificates.crt"
expect_eq "/etc/passwd names user 65532" "$(awk -F: '$3 == 65532 {print $1 ":" $4}' "$root/etc/passwd")" nonroot:65532
for f in /bin/sh /usr/bin/dpkg /usr/bin/apt-get; do
  expect_cmd "no $f: nothing but the exporter's libraries" test ! -e "$root$f"
done
expect_eq "every file is root's" "$(find "$root" ! -user 0 -o ! -group 0 | head -5)" ""
expect_eq "nothing writable by others but /tmp" \
  "$(find "$root" -perm -o+w ! -type l ! -path "$root/tmp" | head -5)" ""

# --- run: the image's user and entry point, a read-only root, against a real Redis ------------
t0=$(now_ms)
start_redis RP
redis-cli -p "$RP" XGROUP CREATE orders workers '$' MKSTREAM >/dev/null
redis-cli -p "$RP" XADD orders '*' n 1 >/dev/null
orders_config "$T/qrel.yml"
find "$root" -printf '%p %s %T@ %m\n' | sort >"$T/tree.before"
mapfile -t argv < <(jq -r '(.Entrypoint + .Cmd)[]' "$T/config.json")
user=$(jq -r .User "$T/config.json")
port=$(free_port)
# A mount namespace of its own: the root bound read-only, /tmp a tmpfs, the config mounted over
# /etc/qrel/qrel.yml as a ConfigMap would be; chroot then drops to the image's user.
# shellcheck disable=SC2016 # expanded by the inner shell, from its arguments
unshare --mount --propagation private sh -c '
  r=$1 cfg=$2 user=$3; shift 3
  mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" &&
  mount -t tmpfs -o mode=1777,size=16m tmpfs "$r/tmp" &&
  mount --bind -o ro "$cfg" "$r/etc/qrel/qrel.yml" &&
  exec chroot --userspec="$user" "$r" "$@"' sh "$root" "$T/qrel.yml" "$user" \
  "${argv[@]}" --web.listen-address="127.0.0.1:$port" 2>"$T/image-exporter.log" &
RUN_PID=$!
PIDS+=("$RUN_PID")
healthy() { curl -fs -o /dev/null "http://127.0.0.1:$port/-/healthy"; }
# Until it answers, or exits (a library missing from the image ends it at once).
up_or_gone() { healthy || ! kill -0 "$RUN_PID" 2>/dev/null; }
wait_for 30 "the image's exporter to answer or exit" up_or_gone || true
if healthy; then
  ok "the image's qrel_exporter answers /-/healthy"
else
  not_ok "the image's qrel_exporter did not start"; cat "$T/image-exporter.log" >&2
fi
expect_eq "it runs as uid 65532" "$(awk '/^Uid:/ {print $2}' "/proc/$RUN_PID/status" 2>/dev/null)" 65532
expect_eq "and gid 65532" "$(awk '/^Gid:/ {print $2}' "/proc/$RUN_PID/status" 2>/dev/null)" 65532
expect_eq "its root is read-only" \
  "$(awk '$5 == "/" {split($6, o, ","); print o[1]}' "/proc/$RUN_PID/mountinfo" 2>/dev/null | tail -1)" ro
curl -fsS "http://127.0.0.1:$port/metrics" -o "$T/metrics" || true
expect_metric "$T/metrics" 1 qrel_collector_up 'source="cache"'
expect_metric "$T/metrics" 1 qrel_queue_messages 'source="cache"' 'queue="orders"' 'state="ready"'
expect_cmd "qrel_build_info of version $version" grep -qE "^qrel_build_info\{version=\"$version\"" "$T/metrics"
kill -TERM "$RUN_PID" 2>/dev/null || true
rc=0; wait "$RUN_PID" || rc=$?
expect_eq "SIGTERM stops it with status 0" "$rc" 0
expect_eq "no error logged" "$(grep -c 'level=error' "$T/image-exporter.log" || true)" 0
find "$root" -printf '%p %s %T@ %m\n' | sort >"$T/tree.after"
expect_eq "the root is unchanged after the run" "$(diff "$T/tree.before" "$T/tree.after" | head -5)" ""
echo "the run against redis-server: $(secs_since "$t0") s"
finish
