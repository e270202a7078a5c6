# src/worker/local.mk -- berth-worker, the remote worker (docs/workers.md;
# included by Makefile.am).

sbin_PROGRAMS += src/worker/berth-worker
src_worker_berth_worker_SOURCES = \
	src/worker/main.c \
	src/worker/config.c src/worker/config.h
src_worker_berth_worker_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/worker -I$(top_srcdir)/src/client
src_worker_berth_worker_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBCURL_CFLAGS)
src_worker_berth_worker_LDADD = src/client/libberth-https.la $(BERTH_CORE_LIBS) $(LIBCURL_LIBS)

if ENABLE_TESTS
# Enrolment against the real berthd (no root).
TESTS += tests/cli/test-workers-enrol.sh
endif
EXTRA_DIST += tests/cli/test-workers-enrol.sh
