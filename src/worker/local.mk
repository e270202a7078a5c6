# src/worker/local.mk -- berth-worker, the remote worker (docs/workers.md;
# included by Makefile.am).

sbin_PROGRAMS += src/worker/berth-worker
src_worker_berth_worker_SOURCES = \
	src/worker/main.c \
	src/worker/config.c src/worker/config.h
src_worker_berth_worker_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/worker -I$(top_srcdir)/src/client
src_worker_berth_worker_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBCURL_CFLAGS) \
	-DBERTH_PROBE_PATH=\"$(pkglibexecdir)/berth-probe\"
src_worker_berth_worker_LDADD = src/client/libberth-https.la $(BERTH_CORE_LIBS) $(LIBCURL_LIBS)
# "run" stages images with the image library (built with image-oci-local).
BERTH_WORKER_RUN_SOURCES = \
	src/worker/worker.h \
	src/worker/daemon.c \
	src/worker/run.c \
	src/worker/heartbeat.c \
	src/worker/images.c src/worker/images.h \
	src/worker/runrecord.c \
	src/worker/runio.c \
	src/worker/selfqual.c \
	src/worker/session.c src/worker/session.h
if BERTH_PLUGIN_IMAGE_OCI_LOCAL
src_worker_berth_worker_SOURCES += $(BERTH_WORKER_RUN_SOURCES)
src_worker_berth_worker_CFLAGS += -DBERTH_WITH_IMAGE $(IMAGE_CFLAGS)
src_worker_berth_worker_LDADD += $(IMAGE_LIBS)
else
EXTRA_DIST += $(BERTH_WORKER_RUN_SOURCES)
endif

if ENABLE_TESTS
# Enrolment against the real berthd (no root).
TESTS += tests/cli/test-workers-enrol.sh
if BERTH_PLUGIN_IMAGE_OCI_LOCAL
# berthd and three berth-worker processes running jobs on crun (root).
TESTS += tests/cli/test-workers.sh
endif
endif
EXTRA_DIST += tests/cli/test-workers-enrol.sh tests/cli/test-workers.sh tests/cli/workers-lib.sh
