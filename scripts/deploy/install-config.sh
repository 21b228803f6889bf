#!/bin/sh
# meson install: writes the example configuration to SYSCONFDIR/insert/insert.conf only
# where there is none, so an upgrade keeps the operator's settings (docs/deploy.md).
# Usage: install-config.sh EXAMPLE SYSCONFDIR (absolute; under $DESTDIR when set).
set -eu
target="${DESTDIR:-}$2/insert/insert.conf"
if [ -e "$target" ]; then
    echo "insert: keeping $target (the new example: <datadir>/doc/insert/examples/insert.conf)"
else
    mkdir -p "$(dirname "$target")"
    cp "$1" "$target"
    chmod 0644 "$target"
    echo "insert: installed $target"
fi
