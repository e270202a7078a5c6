# berth_compiler.m4 -- compiler flag probes.
#
# BERTH_ADD_CFLAGS(VARIABLE, FLAG...)
#   Appends each FLAG the C compiler accepts (with -Werror, so that a flag
#   that only warns is not taken) to the shell variable VARIABLE.
AC_DEFUN([BERTH_ADD_CFLAGS], [
for berth_flag in $2; do
  AS_VAR_PUSHDEF([berth_cv], [berth_cv_cflag_$berth_flag])
  AC_CACHE_CHECK([whether $CC accepts $berth_flag], [berth_cv], [
    berth_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $berth_flag"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
      [AS_VAR_SET([berth_cv], [yes])], [AS_VAR_SET([berth_cv], [no])])
    CFLAGS=$berth_save_CFLAGS])
  AS_VAR_IF([berth_cv], [yes], [$1="$$1 $berth_flag"])
  AS_VAR_POPDEF([berth_cv])
done
])
