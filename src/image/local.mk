# src/image/local.mk -- OCI images: verification, the local blob store,
# import and staging.  An internal library shared by the image-oci-local
# plugin and "berthctl image"; built with that plugin (included by
# Makefile.am).

IMAGE_CFLAGS = $(BERTH_CORE_CFLAGS) $(BERTH_PLUGIN_IMAGE_OCI_LOCAL_CFLAGS) -I$(top_srcdir)/src/image
IMAGE_LIBS = src/image/libberth-image.la $(BERTH_CORE_LIBS) $(BERTH_PLUGIN_IMAGE_OCI_LOCAL_LIBS)
IMAGE_SOURCES = \
	src/image/blobstore.c src/image/blobstore.h \
	src/image/budget.c src/image/budget.h \
	src/image/extract.c src/image/extract.h \
	src/image/gzframe.c src/image/gzframe.h \
	src/image/import.c src/image/import.h \
	src/image/oci.c src/image/oci.h \
	src/image/refusal.c src/image/refusal.h \
	src/image/rootfs.c src/image/rootfs.h \
	src/image/stage.c src/image/stage.h \
	src/image/tarwalk.c src/image/tarwalk.h

if BERTH_PLUGIN_IMAGE_OCI_LOCAL
noinst_LTLIBRARIES += src/image/libberth-image.la
src_image_libberth_image_la_SOURCES = $(IMAGE_SOURCES)
src_image_libberth_image_la_CFLAGS = $(IMAGE_CFLAGS)
src_image_libberth_image_la_LIBADD = $(BERTH_PLUGIN_IMAGE_OCI_LOCAL_LIBS)

if ENABLE_TESTS
# berthctl image and berthd's image source, on images built at test time.
TESTS += tests/cli/test-image.sh tests/cli/test-berthd-image.sh tests/cli/test-image-debian.sh \
	tests/cli/test-berthd-full-disk-stage.sh

# Unit tests of the image library.
IMAGE_UNIT_TESTS = tests/unit/test-oci tests/unit/test-blobstore
check_PROGRAMS += $(IMAGE_UNIT_TESTS)
TESTS += $(IMAGE_UNIT_TESTS)
tests_unit_test_oci_SOURCES = tests/unit/test-oci.c tests/unit/imagetest.h
tests_unit_test_oci_CFLAGS = $(IMAGE_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_oci_LDADD = $(IMAGE_LIBS) $(UNIT_LIBS)
tests_unit_test_blobstore_SOURCES = tests/unit/test-blobstore.c tests/unit/imagetest.h
tests_unit_test_blobstore_CFLAGS = $(IMAGE_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_blobstore_LDADD = $(IMAGE_LIBS) $(UNIT_LIBS)
# The plugin as berthd loads it (its .so must be built first).
check_PROGRAMS += tests/unit/test-image-plugin
TESTS += tests/unit/test-image-plugin
tests_unit_test_image_plugin_SOURCES = tests/unit/test-image-plugin.c tests/unit/imagetest.h \
	tests/image/tarforge.c tests/image/tarforge.h
tests_unit_test_image_plugin_CFLAGS = $(IMAGE_CFLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/tests/image
tests_unit_test_image_plugin_LDADD = $(IMAGE_LIBS) $(UNIT_LIBS) -lz
tests_unit_test_image_plugin_DEPENDENCIES = $(IMAGE_LIBS) plugins/image-oci-local/image-oci-local.la
# Hostile layers written by the suite itself (tests/image/tarforge.c).
check_PROGRAMS += tests/unit/test-extract
TESTS += tests/unit/test-extract
tests_unit_test_extract_SOURCES = tests/unit/test-extract.c tests/image/tarforge.c tests/image/tarforge.h
tests_unit_test_extract_CFLAGS = $(IMAGE_CFLAGS) $(CHECK_CFLAGS) -I$(top_srcdir)/tests/image
tests_unit_test_extract_LDADD = $(IMAGE_LIBS) $(UNIT_LIBS) -lz
endif
else
EXTRA_DIST += $(IMAGE_SOURCES)
endif
EXTRA_DIST += tests/cli/test-image.sh tests/cli/test-berthd-image.sh tests/cli/test-image-debian.sh \
	tests/cli/test-berthd-full-disk-stage.sh \
	tests/unit/test-oci.c tests/unit/test-blobstore.c tests/unit/test-image-plugin.c tests/unit/imagetest.h \
	tests/unit/test-extract.c tests/image/tarforge.c tests/image/tarforge.h
