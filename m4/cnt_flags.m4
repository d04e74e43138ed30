# cnt_flags.m4: compiler flag selection for memcached-counter.

# CNT_CHECK_C11: insist on a compiler that accepts -std=c11.
AC_DEFUN([CNT_CHECK_C11], [
  AX_CHECK_COMPILE_FLAG([-std=c11], [CFLAGS="$CFLAGS -std=c11"],
                        [AC_MSG_ERROR([a C11 compiler is required])])
])

# CNT_WARNINGS: -Wall -Wextra always; -Werror with --enable-werror (CI).
AC_DEFUN([CNT_WARNINGS], [
  WARN_CFLAGS=""
  for flag in -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
              -Wpointer-arith -Wformat=2 -Wvla; do
    AX_CHECK_COMPILE_FLAG([$flag], [WARN_CFLAGS="$WARN_CFLAGS $flag"], [], [-Werror])
  done
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [], [enable_werror=no])
  AS_IF([test "x$enable_werror" = xyes], [WARN_CFLAGS="$WARN_CFLAGS -Werror"])
  AC_SUBST([WARN_CFLAGS])
])

# CNT_OPTIONAL_FLAGS: coverage, sanitizer and thread-sanitizer builds.
AC_DEFUN([CNT_OPTIONAL_FLAGS], [
  EXTRA_CFLAGS=""
  EXTRA_LDFLAGS=""
  AC_ARG_ENABLE([coverage],
    [AS_HELP_STRING([--enable-coverage], [build with gcov instrumentation])],
    [], [enable_coverage=no])
  AS_IF([test "x$enable_coverage" = xyes],
    [EXTRA_CFLAGS="$EXTRA_CFLAGS --coverage -O0"; EXTRA_LDFLAGS="$EXTRA_LDFLAGS --coverage"])
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer])],
    [], [enable_sanitizers=no])
  AS_IF([test "x$enable_sanitizers" = xyes],
    [EXTRA_CFLAGS="$EXTRA_CFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
     EXTRA_LDFLAGS="$EXTRA_LDFLAGS -fsanitize=address,undefined"])
  AC_ARG_ENABLE([tsan],
    [AS_HELP_STRING([--enable-tsan], [build with ThreadSanitizer])],
    [], [enable_tsan=no])
  AS_IF([test "x$enable_tsan" = xyes],
    [EXTRA_CFLAGS="$EXTRA_CFLAGS -fsanitize=thread -fno-omit-frame-pointer"
     EXTRA_LDFLAGS="$EXTRA_LDFLAGS -fsanitize=thread"])
  AC_SUBST([EXTRA_CFLAGS])
  AC_SUBST([EXTRA_LDFLAGS])
  AM_CONDITIONAL([SANITIZED], [test "x$enable_sanitizers$enable_tsan" != xnono])
])
