#!/usr/bin/env bash
# build-image.sh BUILD_DIR OUT_DIR: the container image of qrel_exporter, built with no container
# daemon and no base image pulled from a registry:
#   1. qrel's Debian package, made by CPack from BUILD_DIR into OUT_DIR/deb (its own directory,
#      so a `--target package` running at the same time is not disturbed), in the background
#      while step 2 downloads;
#   2. a root file system from Debian's archive by mmdebstrap, variant `extract`: only the
#      libraries the package's Depends name (resolved by apt, with their own dependencies) and
#      ca-certificates, unpacked and never configured, so no maintainer script, shell or package
#      manager is needed inside; then the package itself (dpkg-deb -x), and the user,
#      /etc/nsswitch.conf and the CA bundle that maintainer scripts would have written;
#   3. an OCI image of that tree (umoci): user 65532:65532, entry point /usr/bin/qrel_exporter,
#      its configuration /etc/qrel/qrel.yml (mount yours there), port 19318, OCI labels;
#   4. the same image as a `docker load`-able archive (skopeo).
# Writes OUT_DIR/oci (OCI layout, tag <version>) and OUT_DIR/qrel_exporter-<version>.docker.tar
# (named qrel/qrel_exporter:<version>, the name deploy/kubernetes uses). The Dockerfile at the top
# of the tree builds the same image with docker; tests/artifacts/image.sh checks both.
# Run as root (mmdebstrap --mode=root), or as a user with subuids (--mode=unshare).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
for tool in cpack dpkg-deb dpkg-shlibdeps mmdebstrap umoci skopeo; do
  command -v "$tool" >/dev/null || { echo "$tool missing (scripts/deps.sh installs it)" >&2; exit 1; }
done

name=qrel/qrel_exporter
user=65532
port=19318
version=$("$build/qrel_exporter" --version | awk '{print $2}')
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
# The image's time is the commit's, so two builds of one commit carry the same dates.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

# --- 1. the package ------------------------------------------------------------------------------
# CPack runs in the background while mmdebstrap fetches the libraries: their list is what
# dpkg-shlibdeps says of the two programs, as it says it for CPack's Depends (checked below).
rm -rf "$out/deb" "$out/shlibdeps"
cpack --config "$build/CPackConfig.cmake" -B "$out/deb" >"$out/cpack.log" 2>&1 &
cpack_pid=$!
trap '[ -z "$cpack_pid" ] || kill "$cpack_pid" 2>/dev/null || true' EXIT
mkdir -p "$out/shlibdeps/debian"
: >"$out/shlibdeps/debian/control"
depends=$(cd "$out/shlibdeps" && dpkg-shlibdeps -O "$build/qrel" "$build/qrel_exporter" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "dpkg-shlibdeps found no library of qrel and qrel_exporter" >&2; exit 1; }

# The libraries: each entry's first alternative, without its version (apt picks the archive's,
# which satisfies it). ca-certificates: libcurl's TLS (SQS, Pub/Sub, the RabbitMQ management API)
# needs the CA bundle. Not adduser, which the package also depends on: its postinst uses it, and
# the image does not run the postinst.
includes=ca-certificates
while read -r dep; do
  dep=${dep%%|*}
  dep=${dep%%(*}
  dep=${dep// /}
  [ -n "$dep" ] && includes+=",$dep"
done < <(tr ',' '\n' <<<"$depends")

# --- 2. the root file system ---------------------------------------------------------------------
# This machine's apt sources for its own Debian release (CI installs its packages from the same
# mirror), and its proxy if it has one; its downloaded indexes prime apt's, which then only
# fetches what changed since.
. /etc/os-release
suite=$VERSION_CODENAME
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && grep -qE "^(deb|Suites:)[^#]*[[:space:]]$suite([[:space:]]|$)" "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { echo "no apt source for $suite in /etc/apt" >&2; exit 1; }
aptopts=()
while read -r opt; do
  [ -n "$opt" ] && aptopts+=(--aptopt="$opt")
done < <(apt-config dump Acquire | grep -iE '^Acquire::(http|https)::Proxy ' || true)
mode=root
[ "$(id -u)" -eq 0 ] || mode=unshare

# Written into the tree below: what base-files, passwd and ca-certificates' maintainer scripts would.
cat >"$out/passwd" <<EOF
root:x:0:0:root:/root:/usr/sbin/nologin
nonroot:x:$user:$user:qrel exporter:/nonexistent:/usr/sbin/nologin
EOF
cat >"$out/group" <<EOF
root:x:0:
nonroot:x:$user:
EOF
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$out/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$out/hosts"
rm -rf "$out/rootfs" "$out/rootfs.tar"
t0=$SECONDS
mmdebstrap --quiet --mode="$mode" --variant=extract --include="$includes" --skip=output/dev \
  "${aptopts[@]}" \
  --setup-hook='mkdir -p "$1/var/lib/apt/lists"; cp /var/lib/apt/lists/*Release /var/lib/apt/lists/*Packages* "$1/var/lib/apt/lists/" 2>/dev/null || true' \
  "$suite" "$out/rootfs" "${sources[@]}" >"$out/mmdebstrap.log" 2>&1 ||
  { tail -20 "$out/mmdebstrap.log" >&2; exit 1; }
echo "mmdebstrap: $((SECONDS - t0)) s"
rc=0
wait "$cpack_pid" || rc=$?
cpack_pid=""
[ "$rc" -eq 0 ] || { tail -20 "$out/cpack.log" >&2; exit 1; }
deb=$(find "$out/deb" -maxdepth 1 -name "qrel_${version}_*.deb" | head -1)
[ -n "$deb" ] || { echo "cpack made no qrel_${version}_*.deb" >&2; exit 1; }
[ "$(dpkg-deb -f "$deb" Depends)" = "adduser, $depends" ] ||
  { echo "the package's Depends ($(dpkg-deb -f "$deb" Depends)) are not adduser and $depends" >&2; exit 1; }
# The package, unpacked as dpkg would (its postinst only makes the user qrel, which the image
# does not run as); what maintainer scripts would have written; no apt state, documentation or
# translations (nothing in the image reads them).
r=$out/rootfs
dpkg-deb -x "$deb" "$r"
install -m 0644 "$out/passwd" "$out/group" "$out/nsswitch.conf" "$out/hosts" "$r/etc/"
# /dev, /proc and /sys are the runtime's to mount: empty mount points, no device nodes.
rm -rf "${r:?}/dev" "$r/proc" "$r/sys"
mkdir -p "$r/etc/ssl/certs" "$r/tmp" "$r/dev" "$r/proc" "$r/sys"
chmod 1777 "$r/tmp"
find "$r/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | xargs cat >"$r/etc/ssl/certs/ca-certificates.crt"
rm -rf "${r:?}/usr/share/doc" "$r/usr/share/man" "$r/usr/share/info" "$r/usr/share/locale" \
  "$r/usr/share/lintian" "$r/var/cache/apt" "$r/var/lib/apt" "$r/var/log/apt"
tar -C "$r" --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
  --clamp-mtime -cf "$out/rootfs.tar" .
rm -rf "$r" "$out/shlibdeps" "$out/passwd" "$out/group" "$out/nsswitch.conf" "$out/hosts"

# --- 3. the OCI image ----------------------------------------------------------------------------
rm -rf "$out/oci"
image=$out/oci:$version
umoci init --layout "$out/oci"
umoci new --image "$image"
umoci raw add-layer --image "$image" --history.created="$created" \
  --history.created_by="scripts/build-image.sh (mmdebstrap, qrel $version)" "$out/rootfs.tar"
labels=(
  --config.label "org.opencontainers.image.title=qrel_exporter"
  --config.label "org.opencontainers.image.description=Prometheus exporter for message-queue reliability"
  --config.label "org.opencontainers.image.version=$version"
  --config.label "org.opencontainers.image.revision=$revision"
  --config.label "org.opencontainers.image.vendor=the qrel authors"
)
umoci config --image "$image" --created="$created" --os=linux \
  --architecture="$(dpkg --print-architecture)" --author="qrel maintainers" \
  --config.user="$user:$user" --config.workingdir=/ \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.entrypoint=/usr/bin/qrel_exporter --config.cmd=--config.file=/etc/qrel/qrel.yml \
  --config.exposedports="$port/tcp" "${labels[@]}"
umoci gc --layout "$out/oci"

# --- 4. the docker archive -----------------------------------------------------------------------
archive=$out/qrel_exporter-$version.docker.tar
rm -f "$archive"
skopeo --insecure-policy copy --quiet "oci:$image" "docker-archive:$archive:$name:$version"
rm -f "$out/rootfs.tar"
echo "image $name:$version: $archive ($(stat -c %s "$archive") bytes), OCI layout $out/oci"
