#!/bin/sh
# prerm of the qrel package: stops qrel-exporter.service before its files go, where systemd runs.
# An upgrade restarts it from the new postinst instead.
set -e

if [ -z "${DPKG_ROOT:-}" ] && [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  deb-systemd-invoke stop qrel-exporter.service >/dev/null || true
fi
exit 0
