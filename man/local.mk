# man/local.mk -- the manual pages: berthctl(1), berthd.json(5),
# berth-plugin(7), berthd(8) and berth-worker(8), in plain roff (man(7) macros).  Each is made from man/NAME.SECTION.in by
# substituting the installation directories, as conf/berthd.service is, so
# the generated pages are build products: not distributed, cleaned by
# "make clean", installed into $(mandir)/manN.  A hyphen in a substituted
# path is written \- so that the page shows an ASCII hyphen-minus that can
# be copied into a shell.  tests/build/test-manpages.sh lints the pages with
# groff and checks them against the programs and the parsers.

MAN_PAGES = man/berthctl.1 man/berthd.json.5 man/berth-plugin.7 man/berthd.8 man/berth-worker.8
nodist_man_MANS = $(MAN_PAGES)
CLEANFILES += $(MAN_PAGES)
EXTRA_DIST += man/berthctl.1.in man/berthd.json.5.in man/berth-plugin.7.in man/berthd.8.in man/berth-worker.8.in \
	tests/build/test-manpages.sh
if ENABLE_TESTS
TESTS += tests/build/test-manpages.sh
endif
man_subst = $(MKDIR_P) man && \
	roff_path() { printf '%s\n' "$$1" | sed 's/-/\\\\-/g'; } && sed \
	-e "s|@bindir[@]|`roff_path '$(bindir)'`|g" \
	-e "s|@sbindir[@]|`roff_path '$(sbindir)'`|g" \
	-e "s|@includedir[@]|`roff_path '$(includedir)'`|g" \
	-e "s|@localstatedir[@]|`roff_path '$(localstatedir)'`|g" \
	-e "s|@pkgconfigdir[@]|`roff_path '$(pkgconfigdir)'`|g" \
	-e "s|@pkgdatadir[@]|`roff_path '$(pkgdatadir)'`|g" \
	-e "s|@pkglibdir[@]|`roff_path '$(pkglibdir)'`|g" \
	-e "s|@pkglibexecdir[@]|`roff_path '$(pkglibexecdir)'`|g" \
	-e "s|@sysconfdir[@]|`roff_path '$(sysconfdir)'`|g" \
	-e "s|@systemdsystemunitdir[@]|`roff_path '$(systemdsystemunitdir)'`|g" \
	-e "s|@tmpfilesdir[@]|`roff_path '$(tmpfilesdir)'`|g" \
	-e "s|@VERSION[@]|$(VERSION)|g"
man/berthctl.1: man/berthctl.1.in Makefile
	$(AM_V_GEN)$(man_subst) $(srcdir)/man/berthctl.1.in >$@.tmp && mv $@.tmp $@
man/berthd.json.5: man/berthd.json.5.in Makefile
	$(AM_V_GEN)$(man_subst) $(srcdir)/man/berthd.json.5.in >$@.tmp && mv $@.tmp $@
man/berth-plugin.7: man/berth-plugin.7.in Makefile
	$(AM_V_GEN)$(man_subst) $(srcdir)/man/berth-plugin.7.in >$@.tmp && mv $@.tmp $@
man/berthd.8: man/berthd.8.in Makefile
	$(AM_V_GEN)$(man_subst) $(srcdir)/man/berthd.8.in >$@.tmp && mv $@.tmp $@
man/berth-worker.8: man/berth-worker.8.in Makefile
	$(AM_V_GEN)$(man_subst) $(srcdir)/man/berth-worker.8.in >$@.tmp && mv $@.tmp $@
