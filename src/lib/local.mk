# src/lib/local.mk -- libberth, in layers (included by Makefile.am).
#
# Each folder is one layer and builds one libtool convenience library.  A
# layer's sources get -I paths to its own folder and to the layers below it
# only, so an #include of a header from a higher layer does not compile
# (tests/build/test-layers.sh checks the same rule on the text):
#
#   basic < json < crypto < journal < pool < job < plugin < qualify < broker
#     < config
#
# The layers link into one convenience library, libberth.la, which the
# programs and the in-tree plugins link statically: nothing of libberth is
# installed or exported (its C API is internal to berth; plugins written
# elsewhere see only <berth/plugin.h> and the host table).

BERTH_LAYER_CPPFLAGS_basic   = -I$(top_srcdir)/src/lib/basic
BERTH_LAYER_CPPFLAGS_json    = $(BERTH_LAYER_CPPFLAGS_basic) -I$(top_srcdir)/src/lib/json
BERTH_LAYER_CPPFLAGS_crypto  = $(BERTH_LAYER_CPPFLAGS_json) -I$(top_srcdir)/src/lib/crypto
BERTH_LAYER_CPPFLAGS_journal = $(BERTH_LAYER_CPPFLAGS_crypto) -I$(top_srcdir)/src/lib/journal
BERTH_LAYER_CPPFLAGS_pool    = $(BERTH_LAYER_CPPFLAGS_journal) -I$(top_srcdir)/src/lib/pool
BERTH_LAYER_CPPFLAGS_job     = $(BERTH_LAYER_CPPFLAGS_pool) -I$(top_srcdir)/src/lib/job
BERTH_LAYER_CPPFLAGS_plugin  = $(BERTH_LAYER_CPPFLAGS_job) -I$(top_srcdir)/src/lib/plugin
BERTH_LAYER_CPPFLAGS_qualify = $(BERTH_LAYER_CPPFLAGS_plugin) -I$(top_srcdir)/src/lib/qualify
BERTH_LAYER_CPPFLAGS_broker  = $(BERTH_LAYER_CPPFLAGS_qualify) -I$(top_srcdir)/src/lib/broker
BERTH_LAYER_CPPFLAGS_config  = $(BERTH_LAYER_CPPFLAGS_broker) -I$(top_srcdir)/src/lib/config
# Everything above libberth (programs, plugins, tests) sees every layer.
BERTH_LIB_CPPFLAGS = $(BERTH_LAYER_CPPFLAGS_config)

BERTH_BASIC_SOURCES = \
	src/lib/basic/backoff.c src/lib/basic/backoff.h \
	src/lib/basic/buf.c src/lib/basic/buf.h \
	src/lib/basic/cgroup2.c src/lib/basic/cgroup2.h \
	src/lib/basic/clock.c src/lib/basic/clock.h \
	src/lib/basic/encoding.c src/lib/basic/encoding.h \
	src/lib/basic/fsutil.c src/lib/basic/fsutil.h \
	src/lib/basic/heap.c src/lib/basic/heap.h \
	src/lib/basic/log.c src/lib/basic/log.h \
	src/lib/basic/macro.h \
	src/lib/basic/names.c src/lib/basic/names.h \
	src/lib/basic/reserve.c src/lib/basic/reserve.h \
	src/lib/basic/tree.c src/lib/basic/tree.h \
	src/lib/basic/utf8.c src/lib/basic/utf8.h
BERTH_JSON_SOURCES = \
	src/lib/json/canon.c src/lib/json/canon.h \
	src/lib/json/jsonobj.c src/lib/json/jsonobj.h
BERTH_CRYPTO_SOURCES = \
	src/lib/crypto/digest.c src/lib/crypto/digest.h \
	src/lib/crypto/envelope.c src/lib/crypto/envelope.h \
	src/lib/crypto/hmac.c src/lib/crypto/hmac.h \
	src/lib/crypto/keypem.c \
	src/lib/crypto/openssl-error.c src/lib/crypto/openssl-error.h \
	src/lib/crypto/sign.c src/lib/crypto/sign.h \
	src/lib/crypto/treesum.c src/lib/crypto/treesum.h
BERTH_JOURNAL_SOURCES = \
	src/lib/journal/audit.c src/lib/journal/audit.h \
	src/lib/journal/audit-key.c \
	src/lib/journal/jobstore.c src/lib/journal/jobstore.h \
	src/lib/journal/jobprune.c src/lib/journal/jobprune.h \
	src/lib/journal/journal.c src/lib/journal/journal.h \
	src/lib/journal/qualification.c src/lib/journal/qualification.h \
	src/lib/journal/qualification-store.c
BERTH_POOL_SOURCES = \
	src/lib/pool/enrol.c src/lib/pool/enrol.h \
	src/lib/pool/envsafe.c src/lib/pool/envsafe.h \
	src/lib/pool/override.c src/lib/pool/override.h \
	src/lib/pool/placement.c src/lib/pool/placement.h \
	src/lib/pool/pool.c src/lib/pool/pool.h \
	src/lib/pool/poolchain.c src/lib/pool/poolchain.h \
	src/lib/pool/registry.c src/lib/pool/registry.h
BERTH_JOB_SOURCES = \
	src/lib/job/bundle.c src/lib/job/bundle.h \
	src/lib/job/job.c src/lib/job/job.h \
	src/lib/job/policy.c src/lib/job/policy.h \
	src/lib/job/receipt.c src/lib/job/receipt.h \
	src/lib/job/report.c src/lib/job/report.h
BERTH_PLUGIN_SOURCES = \
	src/lib/plugin/containment-binding.c src/lib/plugin/containment-binding.h \
	src/lib/plugin/host-table.c src/lib/plugin/host-table.h \
	src/lib/plugin/loader.c src/lib/plugin/loader.h
BERTH_QUALIFY_SOURCES = \
	src/lib/qualify/probes.c src/lib/qualify/probes.h \
	src/lib/qualify/qualify.c src/lib/qualify/qualify.h
BERTH_BROKER_SOURCES = \
	src/lib/broker/broker.c src/lib/broker/broker.h src/lib/broker/broker-internal.h \
	src/lib/broker/broker-evidence.c src/lib/broker/broker-evidence.h \
	src/lib/broker/broker-stage.c \
	src/lib/broker/broker-inputs.c \
	src/lib/broker/broker-jobio.c \
	src/lib/broker/broker-outputs.c \
	src/lib/broker/broker-prune.c \
	src/lib/broker/broker-retry.c \
	src/lib/broker/broker-storage.c \
	src/lib/broker/broker-events.c \
	src/lib/broker/broker-sweep.c \
	src/lib/broker/broker-warm.c \
	src/lib/broker/broker-worker.c \
	src/lib/broker/broker-remote.c \
	src/lib/broker/broker-fleet.c \
	src/lib/broker/broker-lease.c \
	src/lib/broker/broker-runio.c \
	src/lib/broker/inputs-stage.c src/lib/broker/inputs-stage.h \
	src/lib/broker/broker-dispatch.c \
	src/lib/broker/broker-parsed.c \
	src/lib/broker/broker-starts.c \
	src/lib/broker/broker-serial.c \
	src/lib/broker/rootcache.c src/lib/broker/rootcache.h \
	src/lib/broker/broker-roots.c
# berthd.json: read by berthd and "berthctl qualify", written by "berthctl dev-init".
BERTH_CONFIG_SOURCES = \
	src/lib/config/backend-load.c src/lib/config/backend-load.h \
	src/lib/config/berthd-config.c src/lib/config/berthd-config.h
# All of libberth with OpenSSL's SHA-256, for builds that compile it once
# more (the fuzz targets).
BERTH_LIB_SOURCES = $(BERTH_BASIC_SOURCES) $(BERTH_JSON_SOURCES) $(BERTH_CRYPTO_SOURCES) \
	src/lib/crypto/sha256-openssl.c src/lib/crypto/sha256-impl.h \
	$(BERTH_JOURNAL_SOURCES) $(BERTH_POOL_SOURCES) $(BERTH_JOB_SOURCES) $(BERTH_PLUGIN_SOURCES) \
	$(BERTH_QUALIFY_SOURCES) $(BERTH_BROKER_SOURCES) $(BERTH_CONFIG_SOURCES)

BERTH_LAYER_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(OPENSSL_CFLAGS) $(SQLITE_CFLAGS)

noinst_LTLIBRARIES += \
	src/lib/basic/libberth-basic.la \
	src/lib/json/libberth-json.la \
	src/lib/crypto/libberth-crypto.la \
	src/lib/journal/libberth-journal.la \
	src/lib/pool/libberth-pool.la \
	src/lib/job/libberth-job.la \
	src/lib/plugin/libberth-plugin.la \
	src/lib/qualify/libberth-qualify.la \
	src/lib/broker/libberth-broker.la \
	src/lib/config/libberth-config.la \
	src/lib/libberth.la \
	src/lib/crypto/libberth-sha256-openssl.la \
	src/lib/crypto/libberth-sha256-lazy.la

# basic/ sees no third-party library but libsodium (its base64 codec): only
# libc and berth's public headers.
src_lib_basic_libberth_basic_la_SOURCES = $(BERTH_BASIC_SOURCES)
src_lib_basic_libberth_basic_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_basic)
src_lib_basic_libberth_basic_la_CFLAGS = $(AM_CFLAGS) $(SODIUM_CFLAGS)
src_lib_json_libberth_json_la_SOURCES = $(BERTH_JSON_SOURCES)
src_lib_json_libberth_json_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_json)
src_lib_json_libberth_json_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_crypto_libberth_crypto_la_SOURCES = $(BERTH_CRYPTO_SOURCES)
src_lib_crypto_libberth_crypto_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_crypto)
src_lib_crypto_libberth_crypto_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
# SHA-256 itself, twice (digest.h): a program links libberth.la and one of these.
src_lib_crypto_libberth_sha256_openssl_la_SOURCES = src/lib/crypto/sha256-openssl.c src/lib/crypto/sha256-impl.h
src_lib_crypto_libberth_sha256_openssl_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_crypto)
src_lib_crypto_libberth_sha256_openssl_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_crypto_libberth_sha256_lazy_la_SOURCES = src/lib/crypto/sha256-lazy.c src/lib/crypto/sha256-impl.h
src_lib_crypto_libberth_sha256_lazy_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_crypto)
src_lib_crypto_libberth_sha256_lazy_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_journal_libberth_journal_la_SOURCES = $(BERTH_JOURNAL_SOURCES)
src_lib_journal_libberth_journal_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_journal)
src_lib_journal_libberth_journal_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_pool_libberth_pool_la_SOURCES = $(BERTH_POOL_SOURCES)
src_lib_pool_libberth_pool_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_pool)
src_lib_pool_libberth_pool_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_job_libberth_job_la_SOURCES = $(BERTH_JOB_SOURCES)
src_lib_job_libberth_job_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_job)
src_lib_job_libberth_job_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_plugin_libberth_plugin_la_SOURCES = $(BERTH_PLUGIN_SOURCES)
src_lib_plugin_libberth_plugin_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_plugin)
src_lib_plugin_libberth_plugin_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_qualify_libberth_qualify_la_SOURCES = $(BERTH_QUALIFY_SOURCES)
src_lib_qualify_libberth_qualify_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_qualify)
src_lib_qualify_libberth_qualify_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_broker_libberth_broker_la_SOURCES = $(BERTH_BROKER_SOURCES)
src_lib_broker_libberth_broker_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_broker)
src_lib_broker_libberth_broker_la_CFLAGS = $(BERTH_LAYER_CFLAGS)
src_lib_config_libberth_config_la_SOURCES = $(BERTH_CONFIG_SOURCES)
src_lib_config_libberth_config_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(BERTH_LAYER_CPPFLAGS_config)
src_lib_config_libberth_config_la_CFLAGS = $(BERTH_LAYER_CFLAGS)

# The whole library: the layers, highest first, and their dependencies.
src_lib_libberth_la_SOURCES =
src_lib_libberth_la_LIBADD = \
	src/lib/config/libberth-config.la \
	src/lib/broker/libberth-broker.la \
	src/lib/qualify/libberth-qualify.la \
	src/lib/plugin/libberth-plugin.la \
	src/lib/job/libberth-job.la \
	src/lib/pool/libberth-pool.la \
	src/lib/journal/libberth-journal.la \
	src/lib/crypto/libberth-crypto.la \
	src/lib/json/libberth-json.la \
	src/lib/basic/libberth-basic.la \
	$(JANSSON_LIBS) $(SODIUM_LIBS) $(SQLITE_LIBS) $(LIBS)

# Flags for anything that uses libberth.
BERTH_CORE_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(OPENSSL_CFLAGS) $(SQLITE_CFLAGS)
BERTH_CORE_LIBS = src/lib/libberth.la src/lib/crypto/libberth-sha256-openssl.la \
	$(JANSSON_LIBS) $(SODIUM_LIBS) $(OPENSSL_LIBS) $(SQLITE_LIBS)
# For berth-oci-shim, which is started for every job: SHA-256 without
# linking OpenSSL (digest.h, sha256-lazy.c).  Link it with -Wl,--as-needed: libberth.la
# names SQLite, which the parts of libberth the shim uses never call.
BERTH_SHIM_LIBS = src/lib/libberth.la src/lib/crypto/libberth-sha256-lazy.la $(JANSSON_LIBS) $(SODIUM_LIBS)

# The layering rule is also checked on the text: tests/build/test-layers.sh.

if ENABLE_TESTS
# Unit tests (Check), one suite per libberth module: tests/unit/NAME.c, built
# with UNIT_CFLAGS and linked with UNIT_LIBS (automake's default source and
# the LDADD in Makefile.am), so a new suite is one line here.
BERTH_LIB_UNIT_TESTS = \
	tests/unit/test-audit \
	tests/unit/test-backoff \
	tests/unit/test-berthd-config \
	tests/unit/test-broker \
	tests/unit/test-buf \
	tests/unit/test-bundle \
	tests/unit/test-canon \
	tests/unit/test-clock \
	tests/unit/test-digest \
	tests/unit/test-encoding \
	tests/unit/test-enrol \
	tests/unit/test-error \
	tests/unit/test-fsutil \
	tests/unit/test-heap \
	tests/unit/test-envsafe \
	tests/unit/test-hmac \
	tests/unit/test-host \
	tests/unit/test-job \
	tests/unit/test-jobstore \
	tests/unit/test-journal \
	tests/unit/test-jsonobj \
	tests/unit/test-log \
	tests/unit/test-names \
	tests/unit/test-openssl-error \
	tests/unit/test-override \
	tests/unit/test-placement \
	tests/unit/test-plugin \
	tests/unit/test-policy \
	tests/unit/test-pool \
	tests/unit/test-qualify \
	tests/unit/test-receipt \
	tests/unit/test-report \
	tests/unit/test-registry \
	tests/unit/test-reserve \
	tests/unit/test-rootcache \
	tests/unit/test-sign \
	tests/unit/test-utf8
check_PROGRAMS += $(BERTH_LIB_UNIT_TESTS)
TESTS += $(BERTH_LIB_UNIT_TESTS)
# test-digest again, on the SHA-256 berth-oci-shim links (sha256-lazy.c).
check_PROGRAMS += tests/unit/test-digest-lazy
TESTS += tests/unit/test-digest-lazy
tests_unit_test_digest_lazy_SOURCES = tests/unit/test-digest.c
tests_unit_test_digest_lazy_CFLAGS = $(UNIT_CFLAGS) -DBERTH_TEST_SHA256_LAZY
tests_unit_test_digest_lazy_LDADD = $(BERTH_SHIM_LIBS) $(CHECK_LIBS)
tests_unit_test_digest_lazy_LDFLAGS = -Wl,--as-needed
endif
EXTRA_DIST += tests/unit/testutil.h tests/unit/pooltest.h tests/unit/jobtest.h tests/unit/scripttest.h \
	tests/golden/bundle-config.json
EXTRA_DIST += src/lib/README.md
