#!/bin/sh
# Regenerate the autotools build system (configure, Makefile.in, aux files).
# Needs autoconf >= 2.69, automake >= 1.16, libtool and pkg-config's m4 macros.
set -eu
cd "$(dirname "$0")"
exec autoreconf --force --install --verbose "$@"
