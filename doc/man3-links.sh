#!/bin/sh
# man3-links.sh: the section-3 link pages of libmccounter, so that
# `man mcc_acquire` (and every other function's name) finds the page that
# documents it. The pages say which functions they document in their
# SYNOPSIS; this script reads them there, so the links follow the pages.
#   man3-links.sh check HEADER PAGE...
#       every function HEADER declares is declared in the SYNOPSIS of
#       exactly one PAGE and named in that page's NAME; exit 1 otherwise
#   man3-links.sh install DIR HEADER PAGE...
#       after the check, writes DIR/FUNCTION.3 holding ".so man3/PAGE"
#   man3-links.sh uninstall DIR HEADER PAGE...
#       removes those files
# The header is preprocessed with $CC (default cc) to list its functions,
# as client/test_exports.sh does.
set -u
mode=${1:-}
case $mode in
check) shift ;;
install|uninstall) dir=$2; shift 2 ;;
*) echo "usage: man3-links.sh check|install DIR|uninstall DIR HEADER PAGE..." >&2
   exit 2 ;;
esac
header=$1
shift
# shellcheck disable=SC2086 # CC may carry flags
funcs=$(${CC:-cc} -std=c11 -E -P -x c "$header" |
        grep -oE '\bmcc_[a-z0-9_]+ *\(' | sed 's/ *($//' | sort -u) || exit 1
[ -n "$funcs" ] || { echo "man3-links.sh: no function in $header" >&2; exit 1; }

# The page whose SYNOPSIS declares function $1, or nothing; "many" when
# more than one does.
page_of() {
    found=
    for p in $pages; do
        if awk '/^\.SH SYNOPSIS/ { s = 1; next } /^\.SH/ { s = 0 } s' "$p" |
           grep -qE "(^|[ \"*])$1\\("; then
            [ -z "$found" ] && found=$p || found=many
        fi
    done
    printf '%s\n' "$found"
}

pages="$*"
bad=0
for f in $funcs; do
    p=$(page_of "$f")
    case $p in
    '') echo "man3-links.sh: $f: in no page's SYNOPSIS" >&2; bad=1; continue ;;
    many) echo "man3-links.sh: $f: in several pages' SYNOPSIS" >&2; bad=1; continue ;;
    esac
    if ! awk '/^\.SH NAME/ { s = 1; next } /^\.SH/ { s = 0 } s' "$p" |
         grep -qE "(^|[ ,])$f(,|[ ]|\$)"; then
        echo "man3-links.sh: $f: not in the NAME of $p" >&2
        bad=1
        continue
    fi
    # The page itself (mcc_client_new.3) needs no link.
    [ "${p##*/}" = "$f.3" ] && continue
    case $mode in
    install)
        printf '.so man3/%s\n' "${p##*/}" > "$dir/$f.3" || exit 1 ;;
    uninstall)
        rm -f "$dir/$f.3" ;;
    esac
done
[ "$bad" = 0 ] || exit 1
n=$(printf '%s\n' "$funcs" | wc -l)
echo "ok: each of the $n functions of ${header##*/} has its page"
