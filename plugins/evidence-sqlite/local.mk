# plugins/evidence-sqlite/local.mk -- evidence-sqlite, berth's embedded
# evidence store: metadata in an SQLite database of its own, content as
# content-addressed files beside it.  configure --disable-evidence-sqlite
# leaves it out (included by Makefile.am).

EVIDENCE_SQLITE_FILES = \
	plugins/evidence-sqlite/evidence-sqlite.c \
	plugins/evidence-sqlite/evstore.h \
	plugins/evidence-sqlite/evstore-content.c \
	plugins/evidence-sqlite/evstore-db.c \
	plugins/evidence-sqlite/evstore-doc.c

if BERTH_PLUGIN_EVIDENCE_SQLITE
plugin_LTLIBRARIES += plugins/evidence-sqlite/evidence-sqlite.la
plugins_evidence_sqlite_evidence_sqlite_la_SOURCES = $(EVIDENCE_SQLITE_FILES)
plugins_evidence_sqlite_evidence_sqlite_la_CFLAGS = $(BERTH_CORE_CFLAGS) $(BERTH_PLUGIN_EVIDENCE_SQLITE_CFLAGS)
plugins_evidence_sqlite_evidence_sqlite_la_LDFLAGS = $(BERTH_PLUGIN_LDFLAGS)
plugins_evidence_sqlite_evidence_sqlite_la_LIBADD = $(BERTH_CORE_LIBS) $(BERTH_PLUGIN_EVIDENCE_SQLITE_LIBS)

if ENABLE_TESTS
# The plugin itself through the loader, on real SQLite files.
check_PROGRAMS += tests/unit/test-evidence-sqlite
TESTS += tests/unit/test-evidence-sqlite
tests_unit_test_evidence_sqlite_DEPENDENCIES = plugins/evidence-sqlite/evidence-sqlite.la src/lib/libberth.la
endif
else
EXTRA_DIST += $(EVIDENCE_SQLITE_FILES)
endif
EXTRA_DIST += tests/unit/test-evidence-sqlite.c
