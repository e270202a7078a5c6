# The HTTPS client berthctl and berth-worker share (src/client/https.h):
# libcurl; not part of libberth, which does no network I/O.
noinst_LTLIBRARIES += src/client/libberth-https.la
src_client_libberth_https_la_SOURCES = src/client/https.c src/client/https.h
src_client_libberth_https_la_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBCURL_CFLAGS)

# src/berthctl/local.mk -- berthctl, the client and offline toolbox
# (included by Makefile.am).

# Two programs from these sources.  bin/berthctl, which every client command
# starts, links neither SQLite nor libarchive; the verbs that open a journal
# or an image store (audit, image, pool, qualify) run in berthctl-full, the
# same program with every verb, which berthctl starts in its place
# (berthctl.c, run_full()).
BERTHCTL_COMMON_SOURCES = \
	src/berthctl/berthctl.c src/berthctl/berthctl.h \
	src/berthctl/client.c src/berthctl/client.h \
	src/berthctl/cmd-canon.c \
	src/berthctl/cmd-digest.c \
	src/berthctl/cmd-evidence.c \
	src/berthctl/cmd-job.c \
	src/berthctl/cmd-journal.c \
	src/berthctl/cmd-keygen.c \
	src/berthctl/cmd-plugins.c \
	src/berthctl/cmd-policy.c \
	src/berthctl/cmd-verify.c \
	$(BERTHCTL_DEVINIT_SOURCES)
# dev-init, one file per step (src/berthctl/devinit/devinit.h).
BERTHCTL_DEVINIT_SOURCES = \
	src/berthctl/devinit/certs.c src/berthctl/devinit/certs.h \
	src/berthctl/devinit/devinit.c src/berthctl/devinit/devinit.h \
	src/berthctl/devinit/generate.c \
	src/berthctl/devinit/options.c \
	src/berthctl/devinit/plan.c \
	src/berthctl/devinit/runtime.c src/berthctl/devinit/runtime.h \
	src/berthctl/devinit/target.c \
	src/berthctl/devinit/write.c
# The verbs' folders (devinit/) include berthctl's headers by bare name.
BERTHCTL_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/berthctl -I$(top_srcdir)/src/client
BERTHCTL_CFLAGS = $(BERTH_CORE_CFLAGS) $(LIBCURL_CFLAGS) -DBERTH_PROBE_PATH=\"$(pkglibexecdir)/berth-probe\"
BERTHCTL_LDADD = src/client/libberth-https.la $(BERTH_CORE_LIBS) $(OPENSSL_LIBS) $(LIBCURL_LIBS)

bin_PROGRAMS += src/berthctl/berthctl
src_berthctl_berthctl_SOURCES = $(BERTHCTL_COMMON_SOURCES)
src_berthctl_berthctl_CPPFLAGS = $(BERTHCTL_CPPFLAGS)
src_berthctl_berthctl_CFLAGS = $(BERTHCTL_CFLAGS) -DBCTL_LIGHT \
	-DBERTHCTL_FULL_PATH=\"$(pkglibexecdir)/berthctl-full\"
src_berthctl_berthctl_LDADD = $(BERTHCTL_LDADD)
# libberth.la names SQLite; none of the parts this program uses calls it.
src_berthctl_berthctl_LDFLAGS = -Wl,--as-needed

pkglibexec_PROGRAMS += src/berthctl/berthctl-full
src_berthctl_berthctl_full_SOURCES = $(BERTHCTL_COMMON_SOURCES) \
	src/berthctl/local-state.c \
	src/berthctl/cmd-audit.c \
	src/berthctl/cmd-pool.c \
	src/berthctl/cmd-qualify.c
src_berthctl_berthctl_full_CPPFLAGS = $(BERTHCTL_CPPFLAGS)
src_berthctl_berthctl_full_CFLAGS = $(BERTHCTL_CFLAGS)
src_berthctl_berthctl_full_LDADD = $(BERTHCTL_LDADD)
if BERTH_PLUGIN_IMAGE_OCI_LOCAL
src_berthctl_berthctl_full_SOURCES += src/berthctl/cmd-image.c src/berthctl/cmd-image-cache.c
src_berthctl_berthctl_full_CFLAGS += -DBERTH_WITH_IMAGE $(IMAGE_CFLAGS)
src_berthctl_berthctl_full_LDADD += $(IMAGE_LIBS)
else
EXTRA_DIST += src/berthctl/cmd-image.c src/berthctl/cmd-image-cache.c
endif

if ENABLE_TESTS
# berthctl's commands, offline and against a real berthd.
TESTS += \
	tests/cli/test-audit.sh \
	tests/cli/test-canon.sh \
	tests/cli/test-devinit.sh \
	tests/cli/test-digest.sh \
	tests/cli/test-keygen.sh \
	tests/cli/test-plugins.sh \
	tests/cli/test-policy.sh \
	tests/cli/test-pool.sh \
	tests/cli/test-berthctl-full.sh \
	tests/cli/test-berthctl-messages.sh
# How many write(2) calls a program makes to its standard error.
check_PROGRAMS += tests/tools/write-count
tests_tools_write_count_SOURCES = tests/tools/write-count.c
endif
EXTRA_DIST += tests/cli/test-audit.sh tests/cli/test-canon.sh tests/cli/test-devinit.sh tests/cli/test-digest.sh \
	tests/cli/test-keygen.sh tests/cli/test-plugins.sh tests/cli/test-policy.sh tests/cli/test-pool.sh \
	tests/cli/test-berthctl-full.sh tests/cli/test-berthctl-messages.sh
