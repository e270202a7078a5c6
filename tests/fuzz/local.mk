# tests/fuzz/local.mk -- libFuzzer targets (configure --enable-fuzzing,
# clang; "make fuzz" runs each for FUZZ_SECONDS).  The targets compile the
# parser sources themselves so that they carry libFuzzer's coverage
# instrumentation (included by Makefile.am).

EXTRA_DIST += tests/fuzz/fuzz-canon.c tests/fuzz/fuzz-pool.c tests/fuzz/fuzz-audit.c tests/fuzz/fuzz-extract.c \
	tests/fuzz/fuzz-http.c tests/fuzz/fuzz-upload.c tests/fuzz/fuzz-outputs.c \
	tests/fuzz/run-fuzzers.sh tests/fuzz/corpus
if ENABLE_FUZZING
# libberth once more, with coverage instrumentation, linked statically.
noinst_LIBRARIES = tests/fuzz/libberthfuzz.a
tests_fuzz_libberthfuzz_a_SOURCES = $(BERTH_LIB_SOURCES)
tests_fuzz_libberthfuzz_a_CFLAGS = $(BERTH_CORE_CFLAGS) $(FUZZ_CFLAGS)
FUZZ_TARGET_CFLAGS = $(BERTH_CORE_CFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer
FUZZ_LINK_FLAGS = $(FUZZ_CFLAGS) -fsanitize=fuzzer
FUZZ_TARGET_LIBS = tests/fuzz/libberthfuzz.a $(JANSSON_LIBS) $(SODIUM_LIBS) $(OPENSSL_LIBS) $(SQLITE_LIBS) $(LIBS)
FUZZ_TARGETS = tests/fuzz/fuzz-canon tests/fuzz/fuzz-pool tests/fuzz/fuzz-audit
noinst_PROGRAMS += $(FUZZ_TARGETS)
tests_fuzz_fuzz_canon_SOURCES = tests/fuzz/fuzz-canon.c
tests_fuzz_fuzz_canon_CFLAGS = $(FUZZ_TARGET_CFLAGS)
tests_fuzz_fuzz_canon_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_canon_LDADD = $(FUZZ_TARGET_LIBS)
tests_fuzz_fuzz_pool_SOURCES = tests/fuzz/fuzz-pool.c
tests_fuzz_fuzz_pool_CFLAGS = $(FUZZ_TARGET_CFLAGS)
tests_fuzz_fuzz_pool_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_pool_LDADD = $(FUZZ_TARGET_LIBS)
tests_fuzz_fuzz_audit_SOURCES = tests/fuzz/fuzz-audit.c
tests_fuzz_fuzz_audit_CFLAGS = $(FUZZ_TARGET_CFLAGS)
tests_fuzz_fuzz_audit_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_audit_LDADD = $(FUZZ_TARGET_LIBS)

# berthd's request framing and the vendored parser it wraps; the parser,
# unmodified, gets its two warning exceptions in an archive of its own.
noinst_LIBRARIES += tests/fuzz/libpicohttpparserfuzz.a
tests_fuzz_libpicohttpparserfuzz_a_SOURCES = $(PICOHTTPPARSER_SOURCES)
tests_fuzz_libpicohttpparserfuzz_a_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(PICOHTTPPARSER_CPPFLAGS)
tests_fuzz_libpicohttpparserfuzz_a_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS) $(PICOHTTPPARSER_CFLAGS)
FUZZ_TARGETS += tests/fuzz/fuzz-http
tests_fuzz_fuzz_http_SOURCES = tests/fuzz/fuzz-http.c $(BERTHD_FRAMING_SOURCES)
tests_fuzz_fuzz_http_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
tests_fuzz_fuzz_http_CFLAGS = $(FUZZ_TARGET_CFLAGS)
tests_fuzz_fuzz_http_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_http_LDADD = tests/fuzz/libpicohttpparserfuzz.a $(FUZZ_TARGET_LIBS)
# The evidence upload request, framed first as berthd frames it.
FUZZ_TARGETS += tests/fuzz/fuzz-upload
tests_fuzz_fuzz_upload_SOURCES = tests/fuzz/fuzz-upload.c $(BERTHD_FRAMING_SOURCES) $(BERTHD_REQUEST_SOURCES)
tests_fuzz_fuzz_upload_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
tests_fuzz_fuzz_upload_CFLAGS = $(FUZZ_TARGET_CFLAGS)
tests_fuzz_fuzz_upload_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_upload_LDADD = tests/fuzz/libpicohttpparserfuzz.a $(FUZZ_TARGET_LIBS)

if BERTH_PLUGIN_IMAGE_OCI_LOCAL
# Listed with the other targets, so "make fuzz" builds and runs it too.
FUZZ_TARGETS += tests/fuzz/fuzz-extract
tests_fuzz_fuzz_extract_SOURCES = tests/fuzz/fuzz-extract.c $(IMAGE_SOURCES)
tests_fuzz_fuzz_extract_CFLAGS = $(FUZZ_TARGET_CFLAGS) $(BERTH_PLUGIN_IMAGE_OCI_LOCAL_CFLAGS) -I$(top_srcdir)/src/image
tests_fuzz_fuzz_extract_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_extract_LDADD = $(FUZZ_TARGET_LIBS) $(BERTH_PLUGIN_IMAGE_OCI_LOCAL_LIBS)
endif

if BERTH_PLUGIN_RUNTIME_OCI
# The runtime-oci plugin's reader of declared outputs on trees a hostile job
# could leave behind.
FUZZ_TARGETS += tests/fuzz/fuzz-outputs
tests_fuzz_fuzz_outputs_SOURCES = tests/fuzz/fuzz-outputs.c plugins/runtime-oci/outcheck.c \
	plugins/runtime-oci/outcheck.h
tests_fuzz_fuzz_outputs_CFLAGS = $(FUZZ_TARGET_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci
tests_fuzz_fuzz_outputs_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_outputs_LDADD = $(FUZZ_TARGET_LIBS)
endif

fuzz: $(FUZZ_TARGETS)
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} $(SHELL) $(srcdir)/tests/fuzz/run-fuzzers.sh \
		'$(abs_top_builddir)/tests/fuzz' '$(abs_top_srcdir)/tests/fuzz/corpus'
else
fuzz:
	@echo "configure with CC=clang --enable-fuzzing to build the fuzz targets" >&2; exit 1
endif
.PHONY: fuzz
