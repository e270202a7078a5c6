# plugins/runtime-oci/local.mk -- runtime-oci: jobs in OCI containers
# (runsc, crun, runc).  The plugin hands each job to berth-oci-shim, which
# supervises it outside berthd.  configure --disable-runtime-oci leaves it
# out (included by Makefile.am).

OCI_CFLAGS = $(BERTH_CORE_CFLAGS) -I$(top_srcdir)/plugins/runtime-oci
OCI_COMMON_FILES = plugins/runtime-oci/jobdir.h \
	plugins/runtime-oci/ocicfg.c plugins/runtime-oci/ocicfg.h \
	plugins/runtime-oci/binding.c plugins/runtime-oci/binding.h \
	plugins/runtime-oci/cgroup.c plugins/runtime-oci/cgroup.h
OCI_PLUGIN_FILES = \
	plugins/runtime-oci/binding.c plugins/runtime-oci/binding.h \
	plugins/runtime-oci/cgroup.c plugins/runtime-oci/cgroup.h \
	plugins/runtime-oci/jobdir.h \
	plugins/runtime-oci/ocicfg.c plugins/runtime-oci/ocicfg.h \
	plugins/runtime-oci/runtime-oci.c \
	plugins/runtime-oci/shim.c

if BERTH_PLUGIN_RUNTIME_OCI
pkglibexec_PROGRAMS += plugins/runtime-oci/berth-oci-shim
plugins_runtime_oci_berth_oci_shim_SOURCES = plugins/runtime-oci/shim.c $(OCI_COMMON_FILES)
plugins_runtime_oci_berth_oci_shim_CFLAGS = $(OCI_CFLAGS)
plugins_runtime_oci_berth_oci_shim_LDADD = $(BERTH_CORE_LIBS)

plugin_LTLIBRARIES += plugins/runtime-oci/runtime-oci.la
plugins_runtime_oci_runtime_oci_la_SOURCES = plugins/runtime-oci/runtime-oci.c $(OCI_COMMON_FILES)
plugins_runtime_oci_runtime_oci_la_CFLAGS = $(OCI_CFLAGS) \
	-DBERTH_OCI_SHIM_PATH=\"$(pkglibexecdir)/berth-oci-shim\"
plugins_runtime_oci_runtime_oci_la_LDFLAGS = $(BERTH_PLUGIN_LDFLAGS)
plugins_runtime_oci_runtime_oci_la_LIBADD = $(BERTH_CORE_LIBS)

if ENABLE_TESTS
if BERTH_PLUGIN_IMAGE_OCI_LOCAL
# The tests stage images, so they need the image library too.
# Real bundles for real runtimes: the deny-all config.json (job/bundle.h) of
# a staged busybox image, run by runsc (gVisor) and crun.
check_PROGRAMS += tests/tools/mkbundle
tests_tools_mkbundle_SOURCES = tests/tools/mkbundle.c
tests_tools_mkbundle_CFLAGS = $(BERTH_CORE_CFLAGS)
tests_tools_mkbundle_LDADD = $(BERTH_CORE_LIBS)
TESTS += tests/cli/test-bundle-runtimes.sh

# Real jobs through berthd on runtime-oci with real runsc and crun (root).
TESTS += tests/cli/test-runtime-oci.sh tests/cli/test-runtime-oci-disk.sh tests/cli/test-qualify.sh \
	tests/cli/test-runtime-oci-teardown.sh
# A principal revoked mid-job on real runsc (the sweeps, broker.h).
TESTS += tests/cli/test-runsc-revoked.sh
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
	tests/cli/test-runsc-revoked.sh \
	tests/cli/oci-lib.sh tests/bench/overhead tests/unit/test-runtime-oci.c tests/tools/mkbundle.c
