#!/bin/sh
# postinst of the qrel package: creates the service's system user and group `qrel`, then
# enables and (re)starts qrel-exporter.service the way debhelper's generated code does: the
# enable state is recorded with deb-systemd-helper whether or not systemd runs, and the service
# is only started where systemd is the running init (not in a chroot, a container build or CI).
set -e

unit=qrel-exporter.service

case "$1" in
  configure)
    # A system user without a home or a shell; adduser --system does nothing when it exists.
    adduser --quiet --system --group --no-create-home --home /nonexistent \
      --gecos "qrel exporter" qrel
    ;;
  abort-upgrade | abort-remove | abort-deconfigure) ;;
  *)
    echo "postinst called with unknown argument '$1'" >&2
    exit 1
    ;;
esac

if command -v deb-systemd-helper >/dev/null 2>&1; then
  # A first installation enables the unit; an upgrade keeps what the administrator chose.
  if deb-systemd-helper --quiet was-enabled "$unit"; then
    deb-systemd-helper enable "$unit" >/dev/null || true
  else
    deb-systemd-helper update-state "$unit" >/dev/null || true
  fi
fi
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
  systemctl --system daemon-reload >/dev/null || true
  if [ -n "$2" ]; then action=restart; else action=start; fi
  deb-systemd-invoke "$action" "$unit" >/dev/null || true
fi
exit 0
