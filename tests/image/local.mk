# tests/image/local.mk -- test images: scripts that build real OCI image
# layouts at test time (a reproducible busybox image from busybox-static, a Debian bookworm minbase
# image through debootstrap), a layout validator, and the staging benchmark
# (tests/bench/bench-stage.sh, run by hand: see its --help).  The Debian
# image is cached under tests/image/cache in the build tree.

IMAGE_TEST_TOOLS = \
	tests/image/oci-lib.sh \
	tests/image/build-busybox-image.sh \
	tests/image/build-debian-image.sh \
	tests/image/check-layout.sh \
	tests/bench/bench-stage.sh
if ENABLE_TESTS
TESTS += tests/image/test-image-builders.sh
endif
EXTRA_DIST += tests/image/test-image-builders.sh $(IMAGE_TEST_TOOLS)

clean-local: clean-image-cache
clean-image-cache:
	rm -rf tests/image/cache
.PHONY: clean-image-cache
