# src/berthd/local.mk -- berthd, the daemon (included by Makefile.am).

sbin_PROGRAMS += src/berthd/berthd
src_berthd_berthd_SOURCES = \
	src/berthd/main.c \
	src/berthd/api.c src/berthd/server-internal.h \
	src/berthd/api-evidence.c \
	src/berthd/api-wait.c \
	src/berthd/api-workers.c \
	src/berthd/conn.c src/berthd/conn.h \
	src/berthd/front.c src/berthd/front.h \
	src/berthd/metrics.c src/berthd/metrics.h \
	src/berthd/offload.c src/berthd/offload.h \
	src/berthd/refusals.c src/berthd/refusals.h \
	src/berthd/reply-encode.c src/berthd/reply-encode.h \
	src/berthd/server.c src/berthd/server.h \
	src/berthd/slots.c src/berthd/slots.h \
	src/berthd/fence.c src/berthd/fence.h \
	src/berthd/startup-qualify.c src/berthd/startup-qualify.h \
	src/berthd/tls.c src/berthd/tls.h \
	src/berthd/uploads.c src/berthd/uploads.h \
	src/berthd/waits.c src/berthd/waits.h \
	src/berthd/worker.c src/berthd/worker.h
src_berthd_berthd_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBEVENT_CFLAGS) $(LIBSYSTEMD_CFLAGS) \
	-DBERTH_PROBE_PATH=\"$(pkglibexecdir)/berth-probe\"
src_berthd_berthd_LDADD = $(BERTHD_REQUEST_LIBS) $(BERTH_CORE_LIBS) $(LIBEVENT_LIBS) $(OPENSSL_LIBS) $(LIBSYSTEMD_LIBS)

# Strict HTTP/1.1 request framing (http-framing.h) around the vendored
# picohttpparser, a library of its own so that its unit test and the
# benchmark link exactly what berthd links.
noinst_LTLIBRARIES += src/berthd/libberthd-framing.la
BERTHD_FRAMING_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/berthd $(PICOHTTPPARSER_CPPFLAGS)
BERTHD_FRAMING_LIBS = src/berthd/libberthd-framing.la
BERTHD_FRAMING_SOURCES = src/berthd/http-framing.c src/berthd/http-framing.h
src_berthd_libberthd_framing_la_SOURCES = $(BERTHD_FRAMING_SOURCES)
src_berthd_libberthd_framing_la_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
src_berthd_libberthd_framing_la_LIBADD = src/third_party/picohttpparser/libpicohttpparser.la
src_berthd_berthd_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
src_berthd_berthd_LDADD += $(BERTHD_FRAMING_LIBS)

# The evidence upload request: its parsers (content-range.h, query.h,
# uuid.h) and its rules (upload-request.h), a library of their own so that
# the unit test and the fuzz target judge exactly what berthd judges.
noinst_LTLIBRARIES += src/berthd/libberthd-request.la
BERTHD_REQUEST_SOURCES = \
	src/berthd/content-range.c src/berthd/content-range.h \
	src/berthd/query.c src/berthd/query.h \
	src/berthd/upload-request.c src/berthd/upload-request.h \
	src/berthd/uuid.c src/berthd/uuid.h
BERTHD_REQUEST_LIBS = src/berthd/libberthd-request.la
src_berthd_libberthd_request_la_SOURCES = $(BERTHD_REQUEST_SOURCES)
src_berthd_libberthd_request_la_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
src_berthd_libberthd_request_la_CFLAGS = $(BERTH_CORE_CFLAGS)

if ENABLE_TESTS
# berthd over real mTLS with real curl and openssl: the API, configuration,
# hostile clients, and SIGKILL crash tests (these need fault injection).
TESTS += \
	tests/cli/test-berthd.sh \
	tests/cli/test-berthd-config.sh \
	tests/cli/test-berthd-crash.sh \
	tests/cli/test-berthd-full-disk.sh \
	tests/cli/test-berthd-hostile.sh \
	tests/cli/test-berthd-frontdoor.sh \
	tests/cli/test-berthd-sweep.sh \
	tests/cli/test-berthd-retention.sh \
	tests/cli/test-berthd-events.sh \
	tests/cli/test-berthd-front.sh
if BERTH_PLUGIN_EVIDENCE_SQLITE
# Evidence uploads, downloads, quotas and tombstones with the real store;
# jobs with inputs and outputs through it.
TESTS += tests/cli/test-berthd-evidence.sh tests/cli/test-berthd-jobio.sh
endif
# The raw client of the front door tests: exact bytes over TLS, slot
# holders, a request with a hard deadline (OpenSSL, no libevent).
check_PROGRAMS += tests/cli/http-probe
tests_cli_http_probe_SOURCES = tests/cli/http-probe.c \
	tests/cli/http-probe-hold.c tests/cli/http-probe-hold.h \
	tests/cli/http-probe-net.c tests/cli/http-probe-net.h \
	tests/cli/http-probe-reply.c tests/cli/http-probe-reply.h
tests_cli_http_probe_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_cli_http_probe_LDADD = $(BERTH_CORE_LIBS)
# berthd's own modules, unit-tested outside the daemon: the framing rules
# one by one, and admission.
check_PROGRAMS += tests/unit/test-http-framing tests/unit/test-slots tests/unit/test-upload-request \
	tests/unit/test-uploads
TESTS += tests/unit/test-http-framing tests/unit/test-slots tests/unit/test-upload-request tests/unit/test-uploads
tests_unit_test_uploads_SOURCES = tests/unit/test-uploads.c src/berthd/uploads.c src/berthd/uploads.h
tests_unit_test_uploads_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
tests_unit_test_uploads_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_uploads_LDADD = $(BERTHD_REQUEST_LIBS) $(UNIT_LIBS)
tests_unit_test_upload_request_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
tests_unit_test_upload_request_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_upload_request_LDADD = $(BERTHD_REQUEST_LIBS) $(UNIT_LIBS)
tests_unit_test_http_framing_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
tests_unit_test_http_framing_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_http_framing_LDADD = $(BERTHD_FRAMING_LIBS) $(UNIT_LIBS)
tests_unit_test_slots_SOURCES = tests/unit/test-slots.c src/berthd/slots.c src/berthd/slots.h
tests_unit_test_slots_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/src/berthd
endif
EXTRA_DIST += tests/cli/test-berthd.sh tests/cli/test-berthd-config.sh tests/cli/test-berthd-crash.sh \
	tests/cli/test-berthd-full-disk.sh tests/cli/full-disk-lib.sh tests/cli/test-berthd-hostile.sh \
	tests/cli/test-berthd-frontdoor.sh tests/cli/test-berthd-sweep.sh tests/cli/test-berthd-retention.sh \
	tests/cli/test-berthd-evidence.sh tests/cli/test-berthd-jobio.sh tests/cli/test-berthd-events.sh \
	tests/cli/test-berthd-front.sh
