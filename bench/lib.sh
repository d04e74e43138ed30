# lib.sh: shell helpers sourced by bench/run-bench.sh and bench/profile.sh,
# which start and stop servers the same way: a private temporary directory,
# every started pid killed on exit, and the host's memcache `stats`.
# Callers append the pid of each server they start to $pids.

# bench_tmp NAME: makes $tmp (removed on exit) and kills every pid in $pids
# on exit, TERM first, then KILL whatever is left.
bench_tmp() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/cnt-$1.XXXXXX") || exit 1
    pids=""
    trap bench_cleanup EXIT
    trap 'exit 1' INT TERM HUP
}

# EXIT trap of bench_tmp.
bench_cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    sleep 0.2
    for p in $pids; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}

# mc_stat PORT ITEM [SECONDS]: one item of the memcache-protocol `stats` on
# 127.0.0.1:PORT (empty when missing); waits at most SECONDS (3) per line.
mc_stat() {
    local line val=""
    [ -n "$1" ] || return 1
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'stats\r\n' >&3
    while IFS= read -r -t "${3:-3}" line <&3; do
        line=${line%$'\r'}
        [ "$line" = END ] && break
        case $line in "STAT $2 "*) val=${line#"STAT $2 "} ;; esac
    done
    exec 3<&-
    echo "$val"
}
