# tests/plugins/local.mk -- fixture plugins: real shared objects, built for
# the tests only and never installed.  Each one breaks exactly one loader rule
# (see src/lib/plugin/loader.h); tests/unit/test-plugin.c and
# tests/cli/test-plugins.sh assert the error each one gets.  Also the
# scripted runtime berthd's tests use, and the out-of-tree skeleton plugin
# (included by Makefile.am).

FIXTURE_DIR = tests/plugins/.libs

if ENABLE_TESTS
FIXTURE_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere \
	-Wl,--no-undefined -export-symbols-regex '^berth_plugin_entry$$'

check_LTLIBRARIES += \
	tests/plugins/fixture-good.la \
	tests/plugins/fixture-image-source.la \
	tests/plugins/fixture-evidence-store.la \
	tests/plugins/fixture-evidence-v10.la \
	tests/plugins/fixture-containment.la \
	tests/plugins/fixture-newer-minor.la \
	tests/plugins/fixture-runtime-1-0.la \
	tests/plugins/fixture-other-major.la \
	tests/plugins/fixture-short-descriptor.la \
	tests/plugins/fixture-null-op.la \
	tests/plugins/fixture-no-entry.la \
	tests/plugins/fixture-init-fail.la \
	tests/plugins/fixture-world-writable.la \
	tests/plugins/fixture-nodelete.la \
	tests/plugins/fixture-data-entry.la \
	tests/plugins/runtime-script.la \
	tests/plugins/runtime-script-1-0.la

tests_plugins_fixture_good_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_good_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-good\"
tests_plugins_fixture_good_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_image_source_la_SOURCES = tests/plugins/fixture-kinds.c tests/plugins/fixture.h
tests_plugins_fixture_image_source_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_IMAGE_SOURCE
tests_plugins_fixture_image_source_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_evidence_store_la_SOURCES = tests/plugins/fixture-kinds.c tests/plugins/fixture.h
tests_plugins_fixture_evidence_store_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_EVIDENCE_STORE
tests_plugins_fixture_evidence_store_la_LDFLAGS = $(FIXTURE_LDFLAGS)

# An evidence store built for ABI 1.0: accepted, the ops of 1.1 read NULL.
tests_plugins_fixture_evidence_v10_la_SOURCES = tests/plugins/fixture-kinds.c tests/plugins/fixture.h
tests_plugins_fixture_evidence_v10_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_EVIDENCE_STORE -DFIXTURE_EVIDENCE_V10
tests_plugins_fixture_evidence_v10_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_containment_la_SOURCES = tests/plugins/fixture-kinds.c tests/plugins/fixture.h
tests_plugins_fixture_containment_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_CONTAINMENT
tests_plugins_fixture_containment_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_newer_minor_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_newer_minor_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-newer-minor\" \
	-DFIXTURE_ABI='BERTH_PLUGIN_ABI_PACK(BERTH_PLUGIN_ABI_MAJOR, BERTH_PLUGIN_ABI_MINOR + 1)'
tests_plugins_fixture_newer_minor_la_LDFLAGS = $(FIXTURE_LDFLAGS)

# Built for ABI 1.0: its ops table ends at reap() (open_output and forget
# are in the source but not in ops_size, so the loader must not see them).
tests_plugins_fixture_runtime_1_0_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_runtime_1_0_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-runtime-1-0\" \
	-DFIXTURE_ABI='BERTH_PLUGIN_ABI_PACK(1, 0)' -DFIXTURE_OPS_SIZE=BERTH_RUNTIME_OPS_V1_0_SIZE
tests_plugins_fixture_runtime_1_0_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_other_major_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_other_major_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-other-major\" \
	-DFIXTURE_ABI='BERTH_PLUGIN_ABI_PACK(BERTH_PLUGIN_ABI_MAJOR + 1, 0)'
tests_plugins_fixture_other_major_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_short_descriptor_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_short_descriptor_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-short-descriptor\" \
	-DFIXTURE_STRUCT_SIZE='offsetof(struct berth_plugin, ops)'
tests_plugins_fixture_short_descriptor_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_null_op_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_null_op_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-null-op\" -DFIXTURE_NULL_START
tests_plugins_fixture_null_op_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_no_entry_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_no_entry_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-no-entry\" -DFIXTURE_NO_ENTRY
tests_plugins_fixture_no_entry_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere \
	-Wl,--no-undefined -export-symbols-regex '^berth_plugin_entry_misspelt$$'

tests_plugins_fixture_init_fail_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_init_fail_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-init-fail\" -DFIXTURE_INIT_FAIL
tests_plugins_fixture_init_fail_la_LDFLAGS = $(FIXTURE_LDFLAGS)

tests_plugins_fixture_world_writable_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_world_writable_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-world-writable\"
tests_plugins_fixture_world_writable_la_LDFLAGS = $(FIXTURE_LDFLAGS)

# Cannot be unloaded: it keeps its /proc/self/fd/N name after the loader
# closed N, which a later load must not mistake for its own object.
tests_plugins_fixture_nodelete_la_SOURCES = tests/plugins/fixture-runtime.c tests/plugins/fixture.h
tests_plugins_fixture_nodelete_la_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_NAME=\"fixture-nodelete\"
tests_plugins_fixture_nodelete_la_LDFLAGS = $(FIXTURE_LDFLAGS) -Wl,-z,nodelete

tests_plugins_fixture_data_entry_la_SOURCES = tests/plugins/fixture-data-entry.c
tests_plugins_fixture_data_entry_la_LDFLAGS = $(FIXTURE_LDFLAGS)

# The scripted runtime berthd's tests place jobs on (see its header comment).
tests_plugins_runtime_script_la_SOURCES = tests/plugins/runtime-script.c \
	tests/plugins/script-notify.c tests/plugins/script-notify.h
tests_plugins_runtime_script_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) -pthread
tests_plugins_runtime_script_la_LDFLAGS = $(FIXTURE_LDFLAGS) -pthread
tests_plugins_runtime_script_la_LIBADD = $(JANSSON_LIBS) $(SODIUM_LIBS)

# The same scripted runtime built for ABI 1.0: it never notifies, so berthd polls it.
tests_plugins_runtime_script_1_0_la_SOURCES = tests/plugins/runtime-script.c \
	tests/plugins/script-notify.c tests/plugins/script-notify.h
tests_plugins_runtime_script_1_0_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) -pthread
tests_plugins_runtime_script_1_0_la_CPPFLAGS = $(AM_CPPFLAGS) -DSCRIPT_ABI_1_0
tests_plugins_runtime_script_1_0_la_LDFLAGS = $(FIXTURE_LDFLAGS) -pthread
tests_plugins_runtime_script_1_0_la_LIBADD = $(JANSSON_LIBS) $(SODIUM_LIBS)

# After libtool has built the fixtures: tighten the directory (a umask of
# 002 would otherwise make it group-writable and refuse everything), make the
# world-writable fixture world-writable, and add a symlinked one.
tests/plugins/fixtures.stamp: $(check_LTLIBRARIES)
	$(AM_V_GEN)chmod go-w $(FIXTURE_DIR) $(FIXTURE_DIR)/*.so && \
	chmod o+w $(FIXTURE_DIR)/fixture-world-writable.so && \
	rm -f $(FIXTURE_DIR)/fixture-symlink.so && \
	$(LN_S) fixture-good.so $(FIXTURE_DIR)/fixture-symlink.so && \
	touch $@
check_DATA += tests/plugins/fixtures.stamp
CLEANFILES += tests/plugins/fixtures.stamp

endif

# The out-of-tree example plugin; built against the *installed* headers by
# installcheck (and so by distcheck).
EXTRA_DIST += \
	tests/plugins/skeleton/Makefile \
	tests/plugins/skeleton/README.md \
	tests/plugins/skeleton/skeleton.c

