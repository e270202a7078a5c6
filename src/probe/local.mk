# src/probe/local.mk -- berth-probe, the static program the live
# qualification probes (src/lib/qualify/probes.h) run alone in a sandbox's
# root filesystem (included by Makefile.am).

pkglibexec_PROGRAMS += src/probe/berth-probe
src_probe_berth_probe_SOURCES = src/probe/berth-probe.c
src_probe_berth_probe_CFLAGS = -std=gnu11 $(WARN_CFLAGS)
src_probe_berth_probe_LDFLAGS = -all-static
src_probe_berth_probe_LDADD =
