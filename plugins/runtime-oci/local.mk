# plugins/runtime-oci/local.mk -- runtime-oci: jobs in OCI containers
# (runsc, crun, runc).  The plugin hands each job to berth-oci-shim, which
# supervises it outside berthd.  configure --disable-runtime-oci leaves it
# out (included by Makefile.am).

OCI_CFLAGS = $(BERTH_CORE_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci
OCI_COMMON_FILES = plugins/runtime-oci/jobdir.h \
	plugins/runtime-oci/ocicfg.c plugins/runtime-oci/ocicfg.h \
	plugins/runtime-oci/binding.c plugins/runtime-oci/binding.h \
	plugins/runtime-oci/cgroup.c plugins/runtime-oci/cgroup.h \
	plugins/runtime-oci/outcheck.c plugins/runtime-oci/outcheck.h \
	plugins/runtime-oci/outmount.c plugins/runtime-oci/outmount.h \
	plugins/runtime-oci/runstate.c plugins/runtime-oci/runstate.h
OCI_PLUGIN_FILES = \
	plugins/runtime-oci/binding.c plugins/runtime-oci/binding.h \
	plugins/runtime-oci/oci.h plugins/runtime-oci/slots.c plugins/runtime-oci/slot-init.c \
	plugins/runtime-oci/contained.c \
	plugins/runtime-oci/cgroup.c plugins/runtime-oci/cgroup.h \
	plugins/runtime-oci/children.c plugins/runtime-oci/children.h \
	plugins/runtime-oci/jobdir.h \
	plugins/runtime-oci/ocicfg.c plugins/runtime-oci/ocicfg.h \
	plugins/runtime-oci/outcheck.c plugins/runtime-oci/outcheck.h \
	plugins/runtime-oci/outmount.c plugins/runtime-oci/outmount.h \
	plugins/runtime-oci/runstate.c plugins/runtime-oci/runstate.h \
	plugins/runtime-oci/runtime-oci.c \
	plugins/runtime-oci/shim.c \
	plugins/runtime-oci/watch.c plugins/runtime-oci/watch.h

if BERTH_PLUGIN_RUNTIME_OCI
pkglibexec_PROGRAMS += plugins/runtime-oci/berth-oci-shim
plugins_runtime_oci_berth_oci_shim_SOURCES = plugins/runtime-oci/shim.c \
	plugins/runtime-oci/children.c plugins/runtime-oci/children.h $(OCI_COMMON_FILES)
plugins_runtime_oci_berth_oci_shim_CFLAGS = $(OCI_CFLAGS)
plugins_runtime_oci_berth_oci_shim_LDADD = $(BERTH_SHIM_LIBS)
plugins_runtime_oci_berth_oci_shim_LDFLAGS = -Wl,--as-needed

# The process of a warm slot's container: static (it runs on any image's
# root) and without sanitizers, which cannot be linked statically.
pkglibexec_PROGRAMS += plugins/runtime-oci/berth-slot-init
plugins_runtime_oci_berth_slot_init_SOURCES = plugins/runtime-oci/slot-init.c
plugins_runtime_oci_berth_slot_init_CFLAGS = -std=gnu11 $(WARN_CFLAGS) $(JANSSON_CFLAGS)
plugins_runtime_oci_berth_slot_init_LDFLAGS = -all-static

plugin_LTLIBRARIES += plugins/runtime-oci/runtime-oci.la
plugins_runtime_oci_runtime_oci_la_SOURCES = plugins/runtime-oci/runtime-oci.c plugins/runtime-oci/oci.h \
	plugins/runtime-oci/contained.c plugins/runtime-oci/slots.c plugins/runtime-oci/watch.c plugins/runtime-oci/watch.h $(OCI_COMMON_FILES)
plugins_runtime_oci_runtime_oci_la_CFLAGS = $(OCI_CFLAGS) \
	-DBERTH_OCI_SHIM_PATH=\"$(pkglibexecdir)/berth-oci-shim\" \
	-DBERTH_OCI_SLOT_INIT_PATH=\"$(pkglibexecdir)/berth-slot-init\"
plugins_runtime_oci_runtime_oci_la_LDFLAGS = $(BERTH_PLUGIN_LDFLAGS)
plugins_runtime_oci_runtime_oci_la_LIBADD = $(BERTH_CORE_LIBS)

if ENABLE_TESTS
# berthd.json's "containment" on a runtime backend: bound by berthd and
# berthctl qualify (with the fixture containment), refused by runtime-oci.
TESTS += tests/cli/test-berthd-containment.sh
# The reader of declared outputs on a real directory tree (no root needed).
check_PROGRAMS += tests/unit/test-outcheck
TESTS += tests/unit/test-outcheck
tests_unit_test_outcheck_SOURCES = tests/unit/test-outcheck.c plugins/runtime-oci/outcheck.c \
	plugins/runtime-oci/outcheck.h
tests_unit_test_outcheck_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci
# The runtime pin's file identity, which spares the shim a second hash.
check_PROGRAMS += tests/unit/test-ocipin
TESTS += tests/unit/test-ocipin
tests_unit_test_ocipin_SOURCES = tests/unit/test-ocipin.c plugins/runtime-oci/ocicfg.c plugins/runtime-oci/ocicfg.h
tests_unit_test_ocipin_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci
# The shim's children: listing them, and the session that tells the
# runtime's helpers from a sandbox's own processes (no runtime run).
check_PROGRAMS += tests/unit/test-children
TESTS += tests/unit/test-children
tests_unit_test_children_SOURCES = tests/unit/test-children.c plugins/runtime-oci/children.c \
	plugins/runtime-oci/children.h
tests_unit_test_children_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci
# A runtime's state record of a container, read from its --root (no runtime run).
check_PROGRAMS += tests/unit/test-runstate
TESTS += tests/unit/test-runstate
tests_unit_test_runstate_SOURCES = tests/unit/test-runstate.c plugins/runtime-oci/runstate.c \
	plugins/runtime-oci/runstate.h
tests_unit_test_runstate_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci

if BERTH_PLUGIN_IMAGE_OCI_LOCAL
# The tests stage images, so they need the image library too.
# Real bundles for real runtimes: the deny-all config.json (job/bundle.h) of
# a staged busybox image, run by runsc (gVisor) and crun.
check_PROGRAMS += tests/tools/mkbundle
tests_tools_mkbundle_SOURCES = tests/tools/mkbundle.c
tests_tools_mkbundle_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_tools_mkbundle_LDADD = $(BERTH_CORE_LIBS)
TESTS += tests/cli/test-bundle-runtimes.sh

# The plugin driven directly (no berthd), one operation per run, for the
# inputs and outputs tests on real runsc and crun (root).
check_PROGRAMS += tests/tools/oci-drive
tests_tools_oci_drive_SOURCES = tests/tools/oci-drive.c
tests_tools_oci_drive_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_tools_oci_drive_LDADD = $(BERTH_CORE_LIBS)
TESTS += tests/cli/test-runtime-oci-io.sh
# An OCI runtime (the real one) plus a helper process a test can kill when
# it chooses: a runtime helper that dies as the sandbox ends.
check_PROGRAMS += tests/tools/runtime-helper-wrap
tests_tools_runtime_helper_wrap_SOURCES = tests/tools/runtime-helper-wrap.c
# The start handshake with a shim that never answers, or ends without answering.
TESTS += tests/cli/test-runtime-oci-start.sh

# Real jobs through berthd on runtime-oci with real runsc and crun (root).
TESTS += tests/cli/test-runtime-oci.sh tests/cli/test-runtime-oci-disk.sh tests/cli/test-qualify.sh \
	tests/cli/test-runtime-oci-teardown.sh
# A principal revoked mid-job on real runsc (the sweeps, broker.h).
TESTS += tests/cli/test-runsc-revoked.sh
# Retention on real runsc: the runtime tombstone is pruned with its job (broker.h).
TESTS += tests/cli/test-berthd-retention-oci.sh
# The plugin's exit notifications on real runsc and crun (watch.h, broker.h "Events").
TESTS += tests/cli/test-berthd-events-oci.sh
# One staged root per image, shared, checked and evicted (rootcache.h), on runsc and crun.
TESTS += tests/cli/test-berthd-roots-oci.sh
if BERTH_PLUGIN_EVIDENCE_SQLITE
# Jobs with inputs and outputs through berthd and the evidence store, on runsc and crun.
TESTS += tests/cli/test-berthd-jobio-oci.sh
endif
# Warm slots through the plugin's ops, on runsc and crun (root).
TESTS += tests/cli/test-runtime-oci-warm.sh
# Warm slots through berthd: refill, claim, quarantine, restart (root).
TESTS += tests/cli/test-berthd-warm-oci.sh
# The plugin itself through the loader, on real crun (root).
check_PROGRAMS += tests/unit/test-runtime-oci
TESTS += tests/unit/test-runtime-oci
tests_unit_test_runtime_oci_DEPENDENCIES = plugins/runtime-oci/runtime-oci.la plugins/runtime-oci/berth-oci-shim \
	src/probe/berth-probe src/lib/libberth.la
endif
endif
else
EXTRA_DIST += $(OCI_PLUGIN_FILES)
endif
EXTRA_DIST += tests/cli/test-bundle-runtimes.sh tests/cli/test-runtime-oci.sh tests/cli/test-qualify.sh \
	tests/cli/test-runtime-oci-disk.sh tests/cli/test-runtime-oci-teardown.sh \
	tests/cli/test-runsc-revoked.sh tests/cli/test-berthd-retention-oci.sh tests/cli/test-berthd-jobio-oci.sh \
	tests/cli/test-berthd-events-oci.sh tests/cli/test-berthd-roots-oci.sh \
	tests/cli/oci-lib.sh tests/cli/oci-drive-lib.sh tests/bench/overhead tests/bench/direct-lib.sh tests/bench/steps-lib.sh tests/bench/starts tests/bench/slots tests/bench/bench-warm tests/unit/test-runtime-oci.c tests/tools/mkbundle.c \
	tests/cli/test-runtime-oci-io.sh tests/cli/test-runtime-oci-start.sh tests/cli/test-runtime-oci-warm.sh tests/cli/test-berthd-warm-oci.sh \
	tests/tools/oci-drive.c tests/tools/runtime-helper-wrap.c tests/unit/test-outcheck.c tests/unit/test-ocipin.c tests/cli/test-berthd-containment.sh
