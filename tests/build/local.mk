# tests/build/local.mk -- tests of the build itself: the configure macro, the
# systemd units, the layering of libberth, and the installed-file check
# tests/run-all.sh runs after "make install DESTDIR=...", and the packager's
# build without Check it runs on the dist tarball (included by Makefile.am;
# the man page lint is in man/local.mk).

if ENABLE_TESTS
TESTS += tests/build/test-plugin-macro.sh tests/build/test-units.sh tests/build/test-layers.sh
# The suite's own set-up: the Debian package list tests/run-all.sh and the
# quickstart install from, and require_tool, the tests' skip for a missing tool.
TESTS += tests/build/test-packages.sh
if BERTH_PLUGIN_RUNTIME_OCI
# berth-oci-shim, started for every job, without OpenSSL or SQLite.
TESTS += tests/build/test-shim-libs.sh
endif
endif
EXTRA_DIST += tests/build/test-plugin-macro.sh tests/build/test-units.sh tests/build/test-layers.sh \
	tests/build/check-install.sh tests/build/test-without-check.sh \
	tests/build/test-packages.sh tests/debian-packages.sh tests/require-tool.sh tests/build/test-shim-libs.sh
