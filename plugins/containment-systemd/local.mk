# plugins/containment-systemd/local.mk -- containment-systemd: each job in
# an instance of the template unit berth-job@.service, driven over
# systemd's private socket with sd-bus, and its launcher berth-contained.
# configure --disable-containment-systemd leaves it out (included by
# Makefile.am).

CONTAINED_PLUGIN_FILES = \
	plugins/containment-systemd/containment-systemd.c \
	plugins/containment-systemd/manager.c plugins/containment-systemd/manager.h \
	plugins/containment-systemd/unitcheck.c plugins/containment-systemd/unitcheck.h

CONTAINED_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBSYSTEMD_CFLAGS) -I$(top_srcdir)/plugins/containment-systemd

if BERTH_PLUGIN_CONTAINMENT_SYSTEMD
plugin_LTLIBRARIES += plugins/containment-systemd/containment-systemd.la
plugins_containment_systemd_containment_systemd_la_SOURCES = $(CONTAINED_PLUGIN_FILES)
plugins_containment_systemd_containment_systemd_la_CFLAGS = $(CONTAINED_CFLAGS) \
	-DBERTH_JOB_TEMPLATE_PATH=\"$(systemdsystemunitdir)/berth-job@.service\" \
	-DBERTH_CONTAINED_PATH=\"$(pkglibexecdir)/berth-contained\"
plugins_containment_systemd_containment_systemd_la_LDFLAGS = $(BERTH_PLUGIN_LDFLAGS)
plugins_containment_systemd_containment_systemd_la_LIBADD = $(BERTH_CORE_LIBS) $(LIBSYSTEMD_LIBS)

pkglibexec_PROGRAMS += plugins/containment-systemd/berth-contained
plugins_containment_systemd_berth_contained_SOURCES = plugins/containment-systemd/launcher.c
plugins_containment_systemd_berth_contained_CFLAGS = $(CONTAINED_CFLAGS)
plugins_containment_systemd_berth_contained_LDADD = $(BERTH_CORE_LIBS) $(LIBSYSTEMD_LIBS)

# The template unit, with the launcher's installed path.
systemdsystemunit_DATA += conf/berth-job@.service
conf/berth-job@.service: conf/berth-job@.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && sed -e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' \
		$(srcdir)/conf/berth-job@.service.in >$@.tmp && mv $@.tmp $@
CLEANFILES += conf/berth-job@.service

if ENABLE_TESTS
# Against a real systemd booted in a container (systemd-nspawn).
TESTS += tests/cli/test-containment-systemd.sh tests/cli/test-berthd-fence.sh
if BERTH_PLUGIN_RUNTIME_OCI
# Placement past a contained backend whose manager is out of reach (no root).
TESTS += tests/cli/test-berthd-contained-fallback.sh
if BERTH_PLUGIN_IMAGE_OCI_LOCAL
# Real jobs on runsc and crun, each in its own unit (runtime-oci bound to it).
TESTS += tests/cli/test-berthd-contained-oci.sh
endif
endif
endif
else
EXTRA_DIST += $(CONTAINED_PLUGIN_FILES) plugins/containment-systemd/launcher.c
endif
EXTRA_DIST += conf/berth-job@.service.in tests/cli/test-containment-systemd.sh tests/cli/test-berthd-fence.sh \
	tests/cli/test-berthd-contained-oci.sh tests/cli/test-berthd-contained-fallback.sh \
	tests/cli/systemd-lib.sh
