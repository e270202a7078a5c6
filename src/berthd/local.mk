# src/berthd/local.mk -- berthd, the daemon (included by Makefile.am).

sbin_PROGRAMS += src/berthd/berthd
src_berthd_berthd_SOURCES = \
	src/berthd/main.c \
	src/berthd/metrics.c src/berthd/metrics.h \
	src/berthd/server.c src/berthd/server.h \
	src/berthd/startup-qualify.c src/berthd/startup-qualify.h \
	src/berthd/tls.c src/berthd/tls.h \
	src/berthd/worker.c src/berthd/worker.h
src_berthd_berthd_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBEVENT_CFLAGS) $(LIBSYSTEMD_CFLAGS) \
	-DBERTH_PROBE_PATH=\"$(pkglibexecdir)/berth-probe\"
src_berthd_berthd_LDADD = $(BERTH_CORE_LIBS) $(LIBEVENT_LIBS) $(OPENSSL_LIBS) $(LIBSYSTEMD_LIBS)

if ENABLE_TESTS
# berthd over real mTLS with real curl and openssl: the API, configuration,
# hostile clients, and SIGKILL crash tests (these need fault injection).
TESTS += \
	tests/cli/test-berthd.sh \
	tests/cli/test-berthd-config.sh \
	tests/cli/test-berthd-crash.sh \
	tests/cli/test-berthd-full-disk.sh \
	tests/cli/test-berthd-hostile.sh
endif
EXTRA_DIST += tests/cli/test-berthd.sh tests/cli/test-berthd-config.sh tests/cli/test-berthd-crash.sh \
	tests/cli/test-berthd-full-disk.sh \
	tests/cli/test-berthd-hostile.sh
