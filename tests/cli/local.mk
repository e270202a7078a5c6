# tests/cli/local.mk -- the shell tests' shared helpers and the end-to-end
# tests of what the README shows (included by Makefile.am; each component's
# own shell tests are listed in its fragment).

if ENABLE_TESTS
# The examples in conf/ and the README's ./quickstart (its refusals; the
# real run is step 5 of tests/run-all.sh).
TESTS += tests/cli/test-examples.sh tests/cli/test-quickstart.sh
endif
EXTRA_DIST += tests/cli/lib.sh tests/cli/berthd-lib.sh tests/cli/test-examples.sh tests/cli/test-quickstart.sh
