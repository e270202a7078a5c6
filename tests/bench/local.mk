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

# The disk's limit for an evidence object (sha256 + write + fdatasync), and
# evidence-sqlite's put() next to it; bench-evidence reuses the limit line.
noinst_PROGRAMS += tests/bench/bench-disk-limit
tests_bench_bench_disk_limit_SOURCES = tests/bench/bench-disk-limit.c
tests_bench_bench_disk_limit_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_bench_bench_disk_limit_LDADD = $(BERTH_CORE_LIBS)
if BERTH_PLUGIN_EVIDENCE_SQLITE
BENCH_EVIDENCE_PLUGIN = --plugin-dir '$(abs_top_builddir)/plugins/evidence-sqlite/.libs'
endif

# What a job's root costs with the root cache: the first stage, then cached
# holds (needs an image store; run by hand, see the file's header).
if BERTH_PLUGIN_IMAGE_OCI_LOCAL
noinst_PROGRAMS += tests/bench/bench-roots
tests_bench_bench_roots_SOURCES = tests/bench/bench-roots.c
tests_bench_bench_roots_CFLAGS = $(IMAGE_CFLAGS)
tests_bench_bench_roots_LDADD = $(IMAGE_LIBS)
else
EXTRA_DIST += tests/bench/bench-roots.c
endif

# The in-process accept pipeline (berth_broker_submit_batch() in batches,
# no TLS, no HTTP): bench-submit.sh's limit= next to berthd's rates.
noinst_PROGRAMS += tests/bench/bench-pipeline
tests_bench_bench_pipeline_SOURCES = tests/bench/bench-pipeline.c
tests_bench_bench_pipeline_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_bench_bench_pipeline_LDADD = $(BERTH_CORE_LIBS)

# Submissions to a real berthd over HTTPS (libcurl, one thread per client).
noinst_PROGRAMS += tests/bench/bench-submit
tests_bench_bench_submit_SOURCES = tests/bench/bench-submit.c
tests_bench_bench_submit_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) -pthread
tests_bench_bench_submit_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_bench_bench_submit_LDADD = $(LIBCURL_LIBS)
EXTRA_DIST += tests/bench/bench-submit.sh
# Evidence uploads through berthd over mTLS next to the disk's limit, and
# berthd's memory during a 1 GiB upload.
EXTRA_DIST += tests/bench/bench-evidence.sh

bench: tests/bench/bench-primitives tests/bench/bench-pools tests/bench/bench-submit tests/bench/bench-pipeline \
		tests/bench/bench-disk-limit \
		src/berthd/berthd src/berthctl/berthctl src/berthctl/berthctl-full $(plugin_LTLIBRARIES) $(check_LTLIBRARIES) tests/plugins/fixtures.stamp
	BERTH_TEST_PLUGIN_DIR='$(abs_top_builddir)/$(FIXTURE_DIR)' ./tests/bench/bench-primitives
	./tests/bench/bench-pools
	./tests/bench/bench-disk-limit --dir '$(abs_top_builddir)' $(BENCH_EVIDENCE_PLUGIN) --blob
	BERTH_TEST_PLUGIN_DIR='$(abs_top_builddir)/$(FIXTURE_DIR)' \
	BERTHCTL='$(abs_top_builddir)/src/berthctl/berthctl' \
	BERTHCTL_FULL='$(abs_top_builddir)/src/berthctl/berthctl-full' \
	BERTHD='$(abs_top_builddir)/src/berthd/berthd' \
	BENCH_SUBMIT='$(abs_top_builddir)/tests/bench/bench-submit' \
	BENCH_PIPELINE='$(abs_top_builddir)/tests/bench/bench-pipeline' \
		$(SHELL) $(srcdir)/tests/bench/bench-submit.sh
if BERTH_PLUGIN_EVIDENCE_SQLITE
	BERTH_TEST_PLUGIN_DIR='$(abs_top_builddir)/$(FIXTURE_DIR)' \
	BERTH_EVIDENCE_PLUGIN_DIR='$(abs_top_builddir)/plugins/evidence-sqlite/.libs' \
	BERTHCTL='$(abs_top_builddir)/src/berthctl/berthctl' \
	BERTHCTL_FULL='$(abs_top_builddir)/src/berthctl/berthctl-full' \
	BERTHD='$(abs_top_builddir)/src/berthd/berthd' \
	BENCH_DISK_LIMIT='$(abs_top_builddir)/tests/bench/bench-disk-limit' \
	BENCH_DIR='$(abs_top_builddir)' \
		$(SHELL) $(srcdir)/tests/bench/bench-evidence.sh
endif

# make bench-overhead: the runtimes by hand against the same jobs through
# berthd (root; needs the image plugin, so libarchive).
bench-overhead: all tests/tools/mkbundle
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/tests/bench/overhead $(OVERHEAD_ARGS)
# make bench-starts: a queue of jobs started by berthd against the same
# number of runs by hand at the same parallelism (root; image plugin).
bench-starts: all tests/tools/mkbundle tests/bench/bench-submit
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/tests/bench/starts
# make bench-slots: a job cold and in a warm slot, at the runtime plugin
# (root; image plugin).
bench-slots: all tests/tools/oci-drive
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/tests/bench/slots
# make bench-warm: warm against cold through berthd over mTLS, a burst
# against a warm target, and what an idle slot costs (root; image plugin).
bench-warm: all
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/tests/bench/bench-warm $(WARM_ARGS)
# make bench-workers: jobs on 1, 2 and 3 remote workers next to berthd's own
# host, and berthd's CPU per 1,000 of each (root; image plugin).
bench-workers: all
	$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/tests/bench/bench-workers $(WORKERS_ARGS)
.PHONY: bench bench-overhead bench-starts bench-slots bench-warm bench-workers
EXTRA_DIST += tests/bench/overhead tests/bench/starts tests/bench/slots tests/bench/bench-warm \
	tests/bench/bench-workers tests/bench/bench-stage.sh tests/bench/direct-lib.sh tests/bench/steps-lib.sh
