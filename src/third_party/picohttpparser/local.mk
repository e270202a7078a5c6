# src/third_party/picohttpparser/local.mk -- the vendored HTTP/1.x parser
# (README.md beside this file), built as a convenience library for berthd,
# its framing unit test and the benchmarks (included by Makefile.am).
#
# The files are upstream's, unmodified, so they get berthd's warning flags
# with the two exceptions they need and nothing else (README.md says why).

PICOHTTPPARSER_CPPFLAGS = -I$(top_srcdir)/src/third_party/picohttpparser
PICOHTTPPARSER_CFLAGS = -Wno-undef -Wno-implicit-fallthrough
PICOHTTPPARSER_SOURCES = \
	src/third_party/picohttpparser/picohttpparser.c src/third_party/picohttpparser/picohttpparser.h

noinst_LTLIBRARIES += src/third_party/picohttpparser/libpicohttpparser.la
src_third_party_picohttpparser_libpicohttpparser_la_SOURCES = $(PICOHTTPPARSER_SOURCES)
src_third_party_picohttpparser_libpicohttpparser_la_CPPFLAGS = $(BERTH_BASE_CPPFLAGS) $(PICOHTTPPARSER_CPPFLAGS)
src_third_party_picohttpparser_libpicohttpparser_la_CFLAGS = $(AM_CFLAGS) $(PICOHTTPPARSER_CFLAGS)

EXTRA_DIST += src/third_party/picohttpparser/README.md
