# tests/bench/local.mk -- benchmarks: built with everything, run by
# "make bench" and "make bench-overhead"; they print figures and assert
# nothing about time (included by Makefile.am).

noinst_PROGRAMS += tests/bench/bench-primitives
tests_bench_bench_primitives_SOURCES = tests/bench/bench-primitives.c
tests_bench_bench_primitives_CPPFLAGS = $(BERTHD_FRAMING_CPPFLAGS)
tests_bench_bench_primitives_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_bench_bench_primitives_LDADD = $(BERTHD_FRAMING_LIBS) $(BERTH_CORE_LIBS)

noinst_PROGRAMS += tests/bench/bench-pools
tests_bench_bench_pools_SOURCES = tests/bench/bench-pools.c
tests_bench_bench_pools_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_bench_bench_pools_LDADD = $(BERTH_CORE_LIBS)

# Submissions to a real berthd over HTTPS (libcurl, one thread per client).
noinst_PROGRAMS += tests/bench/bench-submit
tests_bench_bench_submit_SOURCES = tests/bench/bench-submit.c
tests_bench_bench_submit_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) -pthread
tests_bench_bench_submit_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_bench_bench_submit_LDADD = $(LIBCURL_LIBS)
EXTRA_DIST += tests/bench/bench-submit.sh

bench: tests/bench/bench-primitives tests/bench/bench-pools tests/bench/bench-submit \
		src/berthd/berthd src/berthctl/berthctl $(check_LTLIBRARIES) tests/plugins/fixtures.stamp
	BERTH_TEST_PLUGIN_DIR='$(abs_top_builddir)/$(FIXTURE_DIR)' ./tests/bench/bench-primitives
	./tests/bench/bench-pools
	BERTH_TEST_PLUGIN_DIR='$(abs_top_builddir)/$(FIXTURE_DIR)' \
	BERTHCTL='$(abs_top_builddir)/src/berthctl/berthctl' \
	BERTHD='$(abs_top_builddir)/src/berthd/berthd' \
	BENCH_SUBMIT='$(abs_top_builddir)/tests/bench/bench-submit' \
		$(SHELL) $(srcdir)/tests/bench/bench-submit.sh

# make bench-overhead: the runtimes by hand against the same jobs through
# berthd (root; needs the image plugin, so libarchive).
bench-overhead: all tests/tools/mkbundle
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/tests/bench/overhead
.PHONY: bench bench-overhead
