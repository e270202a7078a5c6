# berth_plugin.m4 -- per-plugin configure switches for berth.
#
# BERTH_PLUGIN(NAME, DESCRIPTION, [PKG-MODULES], [EXTRA-CHECK])
#
#   Declares the plugin NAME (for example "image-oci-local") and adds
#   --enable-NAME / --disable-NAME to configure.
#
#   PKG-MODULES   pkg-config module list the plugin needs (may be empty).
#                 Found modules are published as BERTH_PLUGIN_<VAR>_CFLAGS
#                 and BERTH_PLUGIN_<VAR>_LIBS, where <VAR> is NAME upper-cased
#                 with "-" turned into "_".
#   EXTRA-CHECK   shell code run after the pkg-config check when that check
#                 passed; it sets berth_plugin_missing to a non-empty
#                 description of what is missing to veto the plugin.
#
#   Behaviour:
#     no switch         build the plugin when every dependency is found,
#                       otherwise skip it and say why in the summary;
#     --enable-NAME     build it; a missing dependency is a configure error;
#     --disable-NAME    do not build it and do not look for its dependencies.
#
#   Defines the automake conditional BERTH_PLUGIN_<VAR> and appends a line to
#   the summary printed by BERTH_PLUGIN_SUMMARY.
AC_DEFUN([BERTH_PLUGIN], [
m4_pushdef([_BP_VAR], m4_translit([$1], [-a-z], [_A-Z]))dnl
m4_pushdef([_BP_SH], m4_translit([$1], [-], [_]))dnl
AC_ARG_ENABLE([$1],
  [AS_HELP_STRING([--enable-$1], [build the $2 plugin (default: when its dependencies are found)])],
  [], [enable_[]_BP_SH=auto])
berth_plugin_missing=
AS_CASE(["$enable_[]_BP_SH"],
  [yes|no|auto], [],
  [AC_MSG_ERROR([--enable-$1 takes yes or no, not '$enable_[]_BP_SH'])])
AS_IF([test "x$enable_[]_BP_SH" != xno], [
  m4_ifval([$3], [
    PKG_CHECK_MODULES([BERTH_PLUGIN_]_BP_VAR, [$3], [],
      [berth_plugin_missing="pkg-config modules: $3"])
  ])
  AS_IF([test -z "$berth_plugin_missing"], [$4])
])
AS_IF([test "x$enable_[]_BP_SH" = xno], [
  berth_plugin_[]_BP_SH=no
  berth_plugin_why="disabled by --disable-$1"
], [test -z "$berth_plugin_missing"], [
  berth_plugin_[]_BP_SH=yes
  berth_plugin_why=
], [test "x$enable_[]_BP_SH" = xyes], [
  AC_MSG_ERROR([--enable-$1 was given but the $2 plugin needs $berth_plugin_missing])
], [
  berth_plugin_[]_BP_SH=no
  berth_plugin_why="missing $berth_plugin_missing"
])
AC_MSG_CHECKING([whether to build the $1 plugin])
AC_MSG_RESULT([$berth_plugin_[]_BP_SH${berth_plugin_why:+ ($berth_plugin_why)}])
AM_CONDITIONAL([BERTH_PLUGIN_]_BP_VAR, [test "x$berth_plugin_[]_BP_SH" = xyes])
berth_plugin_summary="$berth_plugin_summary
    m4_format([%-22s], [$1]) $berth_plugin_[]_BP_SH${berth_plugin_why:+ ($berth_plugin_why)}"
m4_popdef([_BP_SH])dnl
m4_popdef([_BP_VAR])dnl
])

# BERTH_PLUGIN_SUMMARY
#   Prints one line per plugin declared with BERTH_PLUGIN.
AC_DEFUN([BERTH_PLUGIN_SUMMARY], [
AS_IF([test -n "$berth_plugin_summary"],
  [AS_ECHO(["  plugins:$berth_plugin_summary"])],
  [AS_ECHO(["  plugins:               (none declared)"])])
])
