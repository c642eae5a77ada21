#!/bin/sh
# postrm of the qrel package. On remove, systemd forgets the unit; on purge (conffiles already
# gone, and with them /etc/qrel unless the administrator left a file there), the enable symlinks
# and deb-systemd-helper's state go too. The `qrel` user stays, as Debian's packages leave
# theirs: files it owns elsewhere would otherwise fall to a recycled id.
set -e

if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
  if command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper purge qrel-exporter.service >/dev/null || true
  fi
fi
exit 0
