# plugins/image-oci-local/local.mk -- the local OCI image source plugin:
# verified blobs from the image store staged into a fresh root per job
# (src/image/).  configure --disable-image-oci-local leaves it out, with
# "berthctl image" (included by Makefile.am).

if BERTH_PLUGIN_IMAGE_OCI_LOCAL
plugin_LTLIBRARIES += plugins/image-oci-local/image-oci-local.la
plugins_image_oci_local_image_oci_local_la_SOURCES = plugins/image-oci-local/image-oci-local.c
plugins_image_oci_local_image_oci_local_la_CFLAGS = $(IMAGE_CFLAGS)
plugins_image_oci_local_image_oci_local_la_LDFLAGS = $(BERTH_PLUGIN_LDFLAGS)
plugins_image_oci_local_image_oci_local_la_LIBADD = $(IMAGE_LIBS)
else
EXTRA_DIST += plugins/image-oci-local/image-oci-local.c
endif
