# CounterTest.pm: shared helper of the end-to-end suite. Starts mchost with
# counter.so (or the reference yrmcds) on kernel-chosen loopback ports, speaks
# the binary counter protocol with bounded, timed reads, and kills by pid
# every process it started, whatever way the test ends.
package CounterTest;

use strict;
use warnings;

use Exporter 'import';
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::IP;
use POSIX qw(:sys_wait_h);
use Socket qw(SOL_SOCKET SO_LINGER SHUT_WR IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(sleep time);

our @EXPORT = qw(
    OP_NOOP OP_GET OP_ACQUIRE OP_RELEASE OP_STATS OP_DUMP
    OP_WAIT_ACQUIRE OP_RENEW OP_WAIT_RELEASE OP_QUEUES
    ST_OK ST_NOT_FOUND ST_INVALID ST_NOT_AVAILABLE ST_NOT_ACQUIRED
    ST_EXCEEDS_MAXIMUM ST_ALREADY_ACTIVE ST_UNKNOWN_GROUP ST_TOO_MANY_WAITS
    ST_LEASE_EXPIRED ST_UNKNOWN ST_NO_MEMORY
    MAGIC_EVENT EV_GRANTED EV_TIMED_OUT EV_LEASE_EXPIRED EV_SHUTDOWN
    GROUP_DEFAULT
    %STATUS_TEXT @KNOWN_OPCODES
    have_host target_available start_host run_host start_yrmcds start_target
    resp resp_err answer_is
    req req_noop req_get req_acquire req_release req_stats req_dump
    req_wait_acquire req_renew req_wait_release req_queues
    is_event parse_wait_answer parse_event event_packet
    u32 hexdump wait_until mc_command mc_stats kill_pid track_pid
    spawn_to_files finish_bounded run_bounded $LOG_TS
);

use constant {
    OP_NOOP => 0x00, OP_GET => 0x01, OP_ACQUIRE => 0x02, OP_RELEASE => 0x03,
    OP_STATS => 0x10, OP_DUMP => 0x11,
    OP_WAIT_ACQUIRE => 0x20, OP_RENEW => 0x21, OP_WAIT_RELEASE => 0x22,
    OP_QUEUES => 0x23,
    ST_OK => 0x00, ST_NOT_FOUND => 0x01, ST_INVALID => 0x04,
    ST_NOT_AVAILABLE => 0x21, ST_NOT_ACQUIRED => 0x22,
    ST_EXCEEDS_MAXIMUM => 0x23, ST_ALREADY_ACTIVE => 0x24,
    ST_UNKNOWN_GROUP => 0x25, ST_TOO_MANY_WAITS => 0x26,
    ST_LEASE_EXPIRED => 0x27, ST_UNKNOWN => 0x81, ST_NO_MEMORY => 0x82,
    # Events: packets the server sends on its own (waiting acquisition).
    MAGIC_EVENT => 0x92, EV_GRANTED => 0x01, EV_TIMED_OUT => 0x02,
    EV_LEASE_EXPIRED => 0x03, EV_SHUTDOWN => 0x04,
    # maximum 0 / wait or lease of this value: "the group's setting".
    GROUP_DEFAULT => 0xffffffff,
};

# Every opcode the server answers; any other byte gets 0x81. 0x30-0x37 are
# the rate limits (ttl_insert, ttl_query, ttl_update, ttl_purge,
# window_check, gcra_check, multi_check, busiest); 0x40-0x49 tenant throttling
# (auth, throttle, tenant_show, tenant_list, node_show, tenant_set,
# tenant_remove, node_set, unthrottle, reload).
our @KNOWN_OPCODES = (OP_NOOP, OP_GET, OP_ACQUIRE, OP_RELEASE, OP_STATS,
                      OP_DUMP, OP_WAIT_ACQUIRE, OP_RENEW, OP_WAIT_RELEASE,
                      OP_QUEUES, 0x2a, 0x2c, 0x30 .. 0x37, 0x40 .. 0x4a);

# Error bodies, exactly as the reference sends them.
our %STATUS_TEXT = (
    0x01 => 'Not found', 0x04 => 'Invalid arguments',
    0x21 => 'Resource not available', 0x22 => 'Not acquired',
    0x23 => 'Exceeds maximum', 0x24 => 'Already active',
    0x25 => 'Unknown group', 0x26 => 'Too many waits',
    0x27 => 'Lease expired',
    0x81 => 'Unknown command', 0x82 => 'Out of memory',
);

# Upper bound for any wait, so a broken server fails a test, never hangs it.
our $TIMEOUT = $ENV{COUNTER_TEST_TIMEOUT} || 10;

# The time at the start of every log line of mchost and counter.so:
# ISO 8601, UTC, milliseconds (2026-11-27T16:40:01.123Z).
our $LOG_TS = qr/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

my %tracked;    # pid => 1 for every process this test started

# A server closing on us must be a failed write, not a dead test.
$SIG{PIPE} = 'IGNORE';

# Watchdog: a test that blocks somewhere unbounded (a write to a server
# that stopped reading) dies, and END still kills what it started.
$SIG{ALRM} = sub { die "test took longer than its watchdog; giving up\n" };
alarm($ENV{COUNTER_TEST_WATCHDOG} || 180);

# Registers a pid to be killed when the test ends.
sub track_pid { $tracked{$_[0]} = 1 }

# Sends TERM to pid, waits a bounded time, then KILL; reaps if it is ours.
sub kill_pid {
    my ($pid) = @_;
    return unless $pid && $pid > 1;
    delete $tracked{$pid};
    kill 'TERM', $pid or return;
    my $deadline = time + 3;
    while (time < $deadline) {
        my $r = waitpid($pid, WNOHANG);
        return if $r == $pid || ($r == -1 && !kill(0, $pid));
        sleep 0.02;
    }
    kill 'KILL', $pid;
    waitpid($pid, 0);
}

# Forgets a tracked pid that is known to be gone (its number may be
# reused, and END must not kill a stranger).
sub untrack_pid { delete $tracked{$_[0]} }

# True while pid runs: it exists and is not a zombie (a process orphaned
# to an init that does not reap stays a zombie, yet it runs no more).
sub pid_alive {
    my ($pid) = @_;
    return 0 unless $pid && kill(0, $pid);
    open my $fh, '<', "/proc/$pid/stat" or return 1;
    my $stat = <$fh> // '';
    return $stat =~ /.*\) ([ZX]) /s ? 0 : 1;
}
push @EXPORT, qw(untrack_pid pid_alive);

END {
    my $status = $?;
    kill_pid($_) for keys %tracked;
    $? = $status;
}

# Polls cond every 20 ms until it is true or timeout seconds pass.
sub wait_until {
    my ($cond, $timeout) = @_;
    my $deadline = time + ($timeout // $TIMEOUT);
    while (time < $deadline) {
        my $v = $cond->();
        return $v if $v;
        sleep 0.005;
    }
    return;
}

# Big-endian u32 as 4 bytes.
sub u32 { pack 'N', $_[0] }

# Hex of a byte string, for diagnostics.
sub hexdump { join ' ', map { sprintf '%02x', $_ } unpack 'C*', $_[0] }

# Builds a request packet. Options: magic, flags, reserved, opaque,
# body_len (declared length, when it must differ from the real body).
sub req {
    my ($opcode, $body, %o) = @_;
    $body //= '';
    my $len = $o{body_len} // length $body;
    return pack('CCCCNN', $o{magic} // 0x90, $opcode, $o{flags} // 0,
                $o{reserved} // 0, $len, $o{opaque} // 0) . $body;
}

sub req_noop  { req(OP_NOOP, '', @_) }
sub req_stats { req(OP_STATS, '', @_) }
sub req_dump  { req(OP_DUMP, '', @_) }

# Get NAME.
sub req_get {
    my ($name, %o) = @_;
    return req(OP_GET, pack('n', length $name) . $name, %o);
}

# Acquire RESOURCES of NAME checked against MAXIMUM.
sub req_acquire {
    my ($name, $res, $max, %o) = @_;
    return req(OP_ACQUIRE, pack('NNn', $res, $max, length $name) . $name, %o);
}

# Release RESOURCES of NAME.
sub req_release {
    my ($name, $res, %o) = @_;
    return req(OP_RELEASE, pack('Nn', $res, length $name) . $name, %o);
}

# Wait_acquire RESOURCES of NAME with MAXIMUM (0: the group's), waiting
# up to WAIT ms (0: not at all) with a lease of LEASE ms (0: none).
sub req_wait_acquire {
    my ($name, $res, $max, $wait, $lease, %o) = @_;
    return req(OP_WAIT_ACQUIRE,
               pack('NNNNn', $res, $max, $wait, $lease, length $name) . $name,
               %o);
}

# Renew the grant on NAME for LEASE ms.
sub req_renew {
    my ($name, $lease, %o) = @_;
    return req(OP_RENEW, pack('Nn', $lease, length $name) . $name, %o);
}

# Wait_release NAME (cancel the wait or return the grant).
sub req_wait_release {
    my ($name, %o) = @_;
    return req(OP_WAIT_RELEASE, pack('n', length $name) . $name, %o);
}

sub req_queues { req(OP_QUEUES, '', @_) }

# True when a read packet is an event (magic 0x92), not an answer.
sub is_event { my ($r) = @_; return $r && $r->{magic} == MAGIC_EVENT }

# Parses a Wait_acquire success answer: a hash (state position lease_id
# consumption pad), or undef when the body is not the 20-byte layout.
sub parse_wait_answer {
    my ($r) = @_;
    return undef unless $r && $r->{magic} == 0x91 && $r->{status} == ST_OK
                        && length $r->{body} == 20;
    my ($state, $pad, $pos, $id, $cons) = unpack 'Ca3NQ>N', $r->{body};
    return { state => $state, pad => $pad, position => $pos,
             lease_id => $id, consumption => $cons };
}

# Parses an event: a hash (code opaque lease_id value name status
# reserved), or undef when r is no well-formed event.
sub parse_event {
    my ($r) = @_;
    return undef unless is_event($r) && length $r->{body} >= 14;
    my ($id, $value, $nl) = unpack 'Q>Nn', $r->{body};
    return undef unless length $r->{body} == 14 + $nl;
    return { code => $r->{opcode}, opaque => $r->{opaque},
             status => $r->{status}, reserved => $r->{reserved},
             lease_id => $id, value => $value,
             name => substr($r->{body}, 14) };
}

# Builds the exact event packet a server should send.
sub event_packet {
    my ($code, $opaque, $lease_id, $value, $name) = @_;
    my $body = pack('Q>Nn', $lease_id, $value, length $name) . $name;
    return pack('CCCCNN', MAGIC_EVENT, $code, 0, 0, length $body, $opaque)
           . $body;
}

# Builds the exact response packet a server should send.
sub resp {
    my ($opcode, $status, $body, $opaque) = @_;
    $body //= '';
    return pack('CCCCNN', 0x91, $opcode, $status, 0, length $body,
                $opaque // 0) . $body;
}

# The error response for status, with its text as body.
sub resp_err {
    my ($opcode, $status, $opaque) = @_;
    return resp($opcode, $status, $STATUS_TEXT{$status}, $opaque);
}

# Test::More check: response r is exactly the packet want.
sub answer_is {
    my ($r, $want, $title) = @_;
    my $got = $r ? $r->{raw} : undef;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return Test::More::ok(1, $title) if defined $got && $got eq $want;
    Test::More::ok(0, $title);
    Test::More::diag('got:  ' . (defined $got ? hexdump($got) : 'nothing')
                     . "\nwant: " . hexdump($want));
    return 0;
}

# True when start_target can start something.
sub target_available { $ENV{CNT_TEST_REFERENCE} ? 1 : have_host() }

# Starts the server a wire-level test runs against: mchost with counter.so,
# or the reference yrmcds when CNT_TEST_REFERENCE is set (to check the
# tests themselves against the reference).
sub start_target {
    my (%o) = @_;
    if ($ENV{CNT_TEST_REFERENCE}) {
        my ($s, $why) = start_yrmcds(%o);
        die $why unless $s;
        return $s;
    }
    return start_host(%o);
}

# True when mchost and counter.so are built (env set by t/local.mk).
sub have_host {
    return ($ENV{MCHOST} && -x $ENV{MCHOST} && $ENV{COUNTER_SO} &&
            -f $ENV{COUNTER_SO}) ? 1 : 0;
}

# Turns a config hash into the -X string; keys without "counter." get it.
sub _config_string {
    my ($cfg) = @_;
    return $cfg unless ref $cfg;
    my %c = (enable => 'true', port => 0, %$cfg);
    return join ';', map {
        my $k = /^counter\./ ? $_ : "counter.$_";
        "$k=$c{$_}"
    } sort keys %c;
}

# Builds mchost's argument list for a config (hash or raw string).
sub _host_args {
    my ($o, $dir) = @_;
    my $x = defined $o->{raw_x} ? $o->{raw_x}
          : $ENV{COUNTER_SO} . ',' . _config_string($o->{config} // {});
    return ($ENV{MCHOST}, '-p', '0', '-l', '127.0.0.1',
            '-F', "$dir/port", @{ $o->{args} // [] }, '-X', $x);
}

# Forks and execs argv with stdin from /dev/null and stdout/stderr sent to
# dir/stdout and dir/stderr; returns the (tracked) pid.
sub spawn_to_files {
    my ($dir, @argv) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/stdout";
        open STDERR, '>', "$dir/stderr";
        exec @argv or POSIX::_exit(127);
    }
    track_pid($pid);
    return $pid;
}

# Whole file as a string; '' when it is missing.
sub _slurp {
    my ($path) = @_;
    open my $fh, '<', $path or return '';
    local $/;
    my $s = <$fh>;
    return $s // '';
}

# Waits (bounded: timeout seconds, default 20) for a pid started by
# spawn_to_files in dir and kills it if it does not end. Returns (exit code,
# or 128 + signal, or -1 if it had to be killed; stdout text; stderr text).
sub finish_bounded {
    my ($pid, $dir, $timeout) = @_;
    my $st;
    wait_until(sub { waitpid($pid, WNOHANG) == $pid and $st = $?, 1 },
               $timeout // 20);
    if (defined $st) {
        delete $tracked{$pid};    # reaped: its pid may be reused
    } else {
        kill_pid($pid);
    }
    my $rc = !defined $st ? -1 : $st & 127 ? 128 + ($st & 127) : $st >> 8;
    return ($rc, _slurp("$dir/stdout"), _slurp("$dir/stderr"));
}

# Runs argv to the end (bounded) with output in files in dir; returns what
# finish_bounded returns. For command-line tools driven by a test.
sub run_bounded {
    my ($dir, @argv) = @_;
    return finish_bounded(spawn_to_files($dir, @argv), $dir);
}

# Runs mchost expecting it to exit by itself (configuration errors): returns
# (exit status or undef if it had to be killed, stderr text).
sub run_host {
    my (%o) = @_;
    my $dir = tempdir(CLEANUP => 1);
    my $pid = spawn_to_files($dir, _host_args(\%o, $dir));
    my $st;
    wait_until(sub {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid) { $st = $?; return 1 }
        return 0;
    }, $o{timeout} // 5);
    if (!defined $st) {
        kill_pid($pid);
        return (undef, _slurp("$dir/stderr"));
    }
    delete $tracked{$pid};
    return ($st, _slurp("$dir/stderr"));
}

# Starts mchost with counter.so: options config (hash or string), args,
# raw_x. Returns a CounterTest::Server or dies with mchost's stderr.
sub start_host {
    my (%o) = @_;
    my $dir = tempdir(CLEANUP => 1);
    my $pid = spawn_to_files($dir, _host_args(\%o, $dir));
    my $srv = bless { pid => $pid, dir => $dir }, 'CounterTest::Server';
    my $daemon = grep { $_ eq '-d' } @{ $o{args} // [] };
    my $port = wait_until(sub {
        my $p = _slurp("$dir/port");
        return $1 if $p =~ /^(\d+)\s*$/ && $1 > 0;
        if (!$daemon && waitpid($pid, WNOHANG) == $pid) {
            delete $tracked{$pid};
            die "mchost exited early (status $?): " . _slurp("$dir/stderr");
        }
        return;
    });
    die "mchost wrote no port file: " . _slurp("$dir/stderr") unless $port;
    $srv->{mc_port} = $port;
    my %st = mc_stats($port);
    $srv->{counter_port} = $st{counter_port};
    $srv->{stats} = \%st;
    return $srv;
}

# Sends one memcache text command; returns the answer lines up to END,
# ERROR or the first line for one-line answers.
sub mc_command {
    my ($port, $cmd) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Timeout => $TIMEOUT) or die "connect $port: $!";
    print {$s} "$cmd\r\n";
    my $sel = IO::Select->new($s);
    my ($buf, @lines) = ('');
    my $deadline = time + $TIMEOUT;
    while (time < $deadline && $sel->can_read($deadline - time)) {
        my $n = sysread $s, $buf, 65536, length $buf;
        last unless $n;
        while ($buf =~ s/^([^\n]*)\r?\n//) {
            my $l = $1;
            $l =~ s/\r$//;
            push @lines, $l;
            return @lines if $l =~ /^(END|ERROR|CLIENT_ERROR|SERVER_ERROR|OK|VERSION)\b/
                             || ($cmd !~ /^stats/);
        }
    }
    return @lines;
}

# Runs `stats [sub]` and returns the STAT lines as a name => value list.
sub mc_stats {
    my ($port, $sub) = @_;
    my @l = mc_command($port, defined $sub ? "stats $sub" : 'stats');
    return map { /^STAT (\S+) (.*)$/ ? ($1, $2) : () } @l;
}

# Writes a yrmcds configuration and starts it in the foreground; retries with
# other random ports when one is taken. Returns a server or undef + reason.
sub start_yrmcds {
    my (%o) = @_;
    my $bin = $ENV{YRMCDSD} // '/usr/sbin/yrmcdsd';
    return (undef, "$bin not installed") unless -x $bin;
    my $interval = $o{stat_interval} // 10;
    my $last = '';
    for my $try (1 .. 5) {
        my $dir = tempdir(CLEANUP => 1);
        # Below Linux's ephemeral range, where port-0 servers land.
        my @p = map { 12000 + int(rand 20000) } 1 .. 3;
        open my $fh, '>', "$dir/yrmcds.conf" or die "$dir: $!";
        print {$fh} <<"EOF";
virtual_ip = 127.0.0.1
bind_ip = "::1"
port = $p[0]
repl_port = $p[1]
max_connections = 0
temp_dir = "$dir"
log.threshold = warning
log.file = "$dir/yrmcds.log"
buckets = 100000
max_data_size = 1M
heap_data_limit = 256K
memory_limit = 256M
workers = 8
gc_interval = 10
counter.enable = true
counter.port = $p[2]
counter.max_connections = 0
counter.buckets = 1000000
counter.stat_interval = $interval
EOF
        close $fh;
        my $pid = spawn_to_files($dir, $bin, '-f', "$dir/yrmcds.conf");
        my $srv = bless { pid => $pid, dir => $dir, counter_port => $p[2],
                          mc_port => $p[0] }, 'CounterTest::Server';
        my $up = wait_until(sub {
            return -1 if waitpid($pid, WNOHANG) == $pid;
            my $c = eval { CounterTest::Conn->new($p[2]) } or return 0;
            my $r = $c->call(req_noop(opaque => 0x5eed), 1);
            return $r && $r->{raw} eq resp(OP_NOOP, ST_OK, '', 0x5eed) ? 1 : 0;
        }, 5);
        # Someone else may hold one of the ports: then yrmcdsd exits soon
        # after the probe succeeded against the other listener.
        if ($up && $up == 1) {
            sleep 0.3;
            return $srv if waitpid($pid, WNOHANG) == 0 &&
                           _slurp("$dir/yrmcds.log") !~ /ERROR/;
            $up = -1;
        }
        $last = _slurp("$dir/yrmcds.log") . _slurp("$dir/stderr");
        delete $tracked{$pid} if $up;
        kill_pid($pid);
    }
    return (undef, "yrmcdsd did not start: $last");
}

# ---- Rate limits: TTL counters, sliding windows, GCRA, multi-check ----

use constant {
    OP_TTL_INSERT => 0x30, OP_TTL_QUERY => 0x31, OP_TTL_UPDATE => 0x32,
    OP_TTL_PURGE => 0x33, OP_WINDOW_CHECK => 0x34, OP_GCRA_CHECK => 0x35,
    OP_MULTI_CHECK => 0x36,
    ST_EXISTS => 0x28, ST_BELOW_ZERO => 0x29,
    # TTL units (the unit byte of ttl_insert and ttl_update).
    UNIT_NS => 0, UNIT_US => 1, UNIT_MS => 2, UNIT_S => 3, UNIT_MIN => 4,
    UNIT_H => 5,
    # ttl_update's attribute and change bytes.
    TTL_ATTR_QUOTA => 0, TTL_ATTR_TTL => 1,
    CHANGE_PATCH => 0, CHANGE_INCREASE => 1, CHANGE_DECREASE => 2,
    # State byte of a check answer; limited and never are not statuses.
    CHECK_ALLOWED => 0, CHECK_LIMITED => 1, CHECK_NEVER => 2,
    # retry_after_ns of a check that can never succeed (all 64 bits set;
    # the suite needs a perl with 64-bit integers for pack Q anyway).
    RETRY_NEVER => ~0,
    FLAG_PEEK => 0x01,
    MULTI_MAX => 16,
    CHECK_ANSWER_SIZE => 32, TTL_VIEW_SIZE => 17,
};

$STATUS_TEXT{0x28} = 'Exists';
$STATUS_TEXT{0x29} = 'Below zero';

# Nanoseconds in one of each TTL unit, indexed by the unit byte.
our @NS_PER_UNIT = (1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000,
                3_600_000_000_000);

push @EXPORT, qw(
    OP_TTL_INSERT OP_TTL_QUERY OP_TTL_UPDATE OP_TTL_PURGE OP_WINDOW_CHECK
    OP_GCRA_CHECK OP_MULTI_CHECK ST_EXISTS ST_BELOW_ZERO
    UNIT_NS UNIT_US UNIT_MS UNIT_S UNIT_MIN UNIT_H @NS_PER_UNIT
    TTL_ATTR_QUOTA TTL_ATTR_TTL CHANGE_PATCH CHANGE_INCREASE CHANGE_DECREASE
    CHECK_ALLOWED CHECK_LIMITED CHECK_NEVER RETRY_NEVER FLAG_PEEK MULTI_MAX
    CHECK_ANSWER_SIZE TTL_VIEW_SIZE
    req_ttl_insert req_ttl_query req_ttl_update req_ttl_purge
    req_window_check req_gcra_check req_multi_check
    window_check_body gcra_check_body multi_item
    parse_ttl_view parse_check_answer parse_check_body parse_multi_answer
    ttl_view_body check_body opcodes_pending
);

# Takes the body options (name_len: the length field when it must differ
# from the name's; extra: bytes after the name; plus the keys listed) out
# of an option list; returns (body options, the rest for req).
sub _split_opts {
    my ($keys, %o) = @_;
    my %b;
    for my $k ('name_len', 'extra', @$keys) {
        $b{$k} = delete $o{$k} if exists $o{$k};
    }
    return (\%b, %o);
}

# The name field: u16 length (or b->{name_len}), the name, b->{extra}.
sub _name_field {
    my ($name, $b) = @_;
    return pack('n', $b->{name_len} // length $name) . $name
           . ($b->{extra} // '');
}

# Ttl_insert NAME with QUOTA, living TTL of UNIT.
sub req_ttl_insert {
    my ($name, $quota, $ttl, $unit, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TTL_INSERT,
               pack('Q>Q>C', $quota, $ttl, $unit) . _name_field($name, $b),
               %o);
}

# Ttl_query NAME.
sub req_ttl_query {
    my ($name, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TTL_QUERY, _name_field($name, $b), %o);
}

# Ttl_update NAME: ATTRIBUTE (TTL_ATTR_*) changed by CHANGE (CHANGE_*)
# with VALUE, in UNIT when the attribute is the ttl.
sub req_ttl_update {
    my ($name, $attr, $change, $unit, $value, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TTL_UPDATE,
               pack('CCCQ>', $attr, $change, $unit, $value)
               . _name_field($name, $b), %o);
}

# Ttl_purge NAME.
sub req_ttl_purge {
    my ($name, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TTL_PURGE, _name_field($name, $b), %o);
}

# The flags byte of a check: o->{flags} when given, else the peek bit.
sub _check_flags { my ($b) = @_; $b->{flags} // ($b->{peek} ? FLAG_PEEK : 0) }

my @WINDOW_KEYS = qw(flags peek slots reserved cost window_ns);
my @GCRA_KEYS = qw(flags peek reserved cost);

# Body of a window_check of NAME against LIMIT. Options: cost (1),
# window_ns (0: the default second), slots (0: the default 10), peek,
# flags (the raw byte, instead of peek), reserved (u16), name_len, extra.
sub window_check_body {
    my ($name, $limit, %b) = @_;
    return pack('CCnNNQ>', _check_flags(\%b), $b{slots} // 0,
                $b{reserved} // 0, $limit, $b{cost} // 1,
                $b{window_ns} // 0) . _name_field($name, \%b);
}

# Window_check request; options as window_check_body, plus req's.
sub req_window_check {
    my ($name, $limit, @o) = @_;
    my ($b, %o) = _split_opts(\@WINDOW_KEYS, @o);
    return req(OP_WINDOW_CHECK, window_check_body($name, $limit, %$b), %o);
}

# Body of a gcra_check of NAME: BURST, COUNT per PERIOD_NS. Options: cost
# (1), peek, flags (raw byte), reserved (3 bytes), name_len, extra.
sub gcra_check_body {
    my ($name, $burst, $count, $period, %b) = @_;
    return pack('Ca3NNNQ>', _check_flags(\%b), $b{reserved} // "\0\0\0",
                $burst, $count, $b{cost} // 1, $period)
           . _name_field($name, \%b);
}

# Gcra_check request; options as gcra_check_body, plus req's.
sub req_gcra_check {
    my ($name, $burst, $count, $period, @o) = @_;
    my ($b, %o) = _split_opts(\@GCRA_KEYS, @o);
    return req(OP_GCRA_CHECK,
               gcra_check_body($name, $burst, $count, $period, %$b), %o);
}

# One item of a multi_check, from an array ref: [OP_WINDOW_CHECK, name,
# limit, options], [OP_GCRA_CHECK, name, burst, count, period, options]
# (options as the body builders'), or [opcode, \raw_body, item_len] for
# any bytes (a reference to a string; item_len defaults to its length).
sub multi_item {
    my ($item) = @_;
    my ($op, @a) = @$item;
    my $body;
    if (ref $a[0]) {
        $body = ${ $a[0] };
        return pack('Cn', $op, $a[1] // length $body) . $body;
    }
    $body = $op == OP_WINDOW_CHECK ? window_check_body(@a)
          : $op == OP_GCRA_CHECK ? gcra_check_body(@a)
          : die sprintf "multi_item: no body builder for opcode 0x%02x", $op;
    return pack('Cn', $op, length $body) . $body;
}

# Multi_check of the items (array refs, see multi_item). Options: peek,
# flags (raw byte), count (the count byte, when it must differ from the
# number of items), extra (bytes after the items), plus req's.
sub req_multi_check {
    my ($items, @o) = @_;
    my ($b, %o) = _split_opts([qw(flags peek count)], @o);
    return req(OP_MULTI_CHECK,
               pack('CC', _check_flags($b), $b->{count} // scalar @$items)
               . join('', map { multi_item($_) } @$items)
               . ($b->{extra} // ''), %o);
}

# The 17-byte ttl_query body (quota, ttl_left, unit).
sub ttl_view_body { pack 'Q>Q>C', @_[0 .. 2] }

# The 32-byte check answer (state, limit, remaining, used,
# retry_after_ns, reset_after_ns).
sub check_body { pack 'Cx3NNNQ>Q>', @_[0 .. 5] }

# Parses a ttl view answer (status 0, 17 bytes): a hash (quota ttl_left
# unit), or undef when r is not one.
sub parse_ttl_view {
    my ($r) = @_;
    return undef unless $r && $r->{magic} == 0x91 && $r->{status} == ST_OK
                        && length $r->{body} == TTL_VIEW_SIZE;
    my ($q, $left, $unit) = unpack 'Q>Q>C', $r->{body};
    return { quota => $q, ttl_left => $left, unit => $unit };
}

# Parses 32 bytes of a check answer: a hash (state pad limit remaining
# used retry_after_ns reset_after_ns); undef unless exactly 32 bytes.
sub parse_check_body {
    my ($b) = @_;
    return undef unless defined $b && length $b == CHECK_ANSWER_SIZE;
    my ($state, $pad, $limit, $rem, $used, $retry, $reset) =
        unpack 'Ca3NNNQ>Q>', $b;
    return { state => $state, pad => $pad, limit => $limit,
             remaining => $rem, used => $used, retry_after_ns => $retry,
             reset_after_ns => $reset };
}

# Parses a window_check or gcra_check answer (status 0, 32 bytes): see
# parse_check_body; undef when r is not one.
sub parse_check_answer {
    my ($r) = @_;
    return undef unless $r && $r->{magic} == 0x91 && $r->{status} == ST_OK;
    return parse_check_body($r->{body});
}

# Parses a multi_check answer (status 0): a hash (overall count items,
# items a list of parsed check answers), or undef when the body is not
# 2 + 32 * count bytes.
sub parse_multi_answer {
    my ($r) = @_;
    return undef unless $r && $r->{magic} == 0x91 && $r->{status} == ST_OK
                        && length $r->{body} >= 2;
    my ($overall, $count) = unpack 'CC', $r->{body};
    return undef unless length $r->{body} == 2 + CHECK_ANSWER_SIZE * $count;
    my @items = map {
        parse_check_body(substr $r->{body}, 2 + CHECK_ANSWER_SIZE * $_,
                         CHECK_ANSWER_SIZE)
    } 0 .. $count - 1;
    return { overall => $overall, count => $count, items => \@items };
}

# A reason to skip a test of the opcodes ops when the server answers one
# of them 0x81 while the suite does not list it in @KNOWN_OPCODES yet (its
# server side is not built); '' otherwise. Once an opcode is listed, a
# 0x81 for it fails the tests instead. The probe has an empty body, which
# a server that knows the opcode refuses with 0x04, changing nothing.
sub opcodes_pending {
    my ($srv, @ops) = @_;
    my %known = map { $_ => 1 } @KNOWN_OPCODES;
    my $c = $srv->connect;
    my @missing;
    for my $op (grep { !$known{$_} } @ops) {
        my $r = $c->call(req($op, ''));
        push @missing, sprintf('0x%02x', $op)
            if $r && $r->{status} == ST_UNKNOWN;
    }
    $c->close;
    return @missing ? "the server answers @missing with 0x81 (not built yet)"
                    : '';
}

# ---- Tenant throttling: charges, tenants, the node, privileges ----

use constant {
    OP_AUTH => 0x40, OP_THROTTLE => 0x41, OP_TENANT_SHOW => 0x42,
    OP_TENANT_LIST => 0x43, OP_NODE_SHOW => 0x44, OP_TENANT_SET => 0x45,
    OP_TENANT_REMOVE => 0x46, OP_NODE_SET => 0x47, OP_UNTHROTTLE => 0x48,
    OP_RELOAD => 0x49, OP_TENANT_SET_JSON => 0x2a, OP_NODE_SET_JSON => 0x2c,
    ST_NOT_PERMITTED => 0x2a, ST_AUTH_FAILED => 0x2b,
    ST_OVER_CAPACITY => 0x2c,
    # State and reason bytes of a throttle answer.
    THROTTLE_ALLOWED => 0, THROTTLE_THROTTLED => 1,
    REASON_NONE => 0, REASON_RESERVE => 1, REASON_POOL_EMPTY => 2,
    REASON_HARD_LIMIT => 3,
    # A hard limit of this value (and remaining with throttling off and
    # no hard limit): no limit.
    UNLIMITED => 0xffffffff,
    # tenant_set's flags byte; the tenant view's flags byte.
    SET_RESERVED => 0x01, SET_HARD_LIMIT => 0x02, TENANT_CONFIGURED => 0x01,
    THROTTLE_ANSWER_SIZE => 24, TENANT_VIEW_SIZE => 32, NODE_VIEW_SIZE => 32,
    AUTH_MAX_FAILURES => 3,
};

$STATUS_TEXT{0x2a} = 'Not permitted';
$STATUS_TEXT{0x2b} = 'Auth failed';
$STATUS_TEXT{0x2c} = 'Over capacity';

# Names of the reasons, indexed by the reason byte (counterctl's words).
our @REASON_NAME = qw(none reserve pool_empty hard_limit);

# The throttling opcodes, for opcodes_pending.
our @THROTTLE_OPCODES = (0x40 .. 0x49);
# The seed's JSON commands (SetBucketThrottleProperties and
# SetNodeThrottleProperties), for opcodes_pending.
our @THROTTLE_JSON_OPCODES = (0x2a, 0x2c);

push @EXPORT, qw(
    OP_AUTH OP_THROTTLE OP_TENANT_SHOW OP_TENANT_LIST OP_NODE_SHOW
    OP_TENANT_SET OP_TENANT_REMOVE OP_NODE_SET OP_UNTHROTTLE OP_RELOAD
    OP_TENANT_SET_JSON OP_NODE_SET_JSON @THROTTLE_JSON_OPCODES
    req_tenant_set_json req_node_set_json
    ST_NOT_PERMITTED ST_AUTH_FAILED ST_OVER_CAPACITY
    THROTTLE_ALLOWED THROTTLE_THROTTLED REASON_NONE REASON_RESERVE
    REASON_POOL_EMPTY REASON_HARD_LIMIT UNLIMITED SET_RESERVED
    SET_HARD_LIMIT TENANT_CONFIGURED THROTTLE_ANSWER_SIZE TENANT_VIEW_SIZE
    NODE_VIEW_SIZE AUTH_MAX_FAILURES @REASON_NAME @THROTTLE_OPCODES
    req_auth req_throttle req_tenant_show req_tenant_list req_node_show
    req_tenant_set req_tenant_remove req_node_set req_unthrottle req_reload
    throttle_answer_body tenant_view_body node_view_body
    parse_throttle_answer parse_tenant_view parse_tenant_record
    parse_node_view start_throttle_host write_file mono_now
    wait_fresh_second throttle_burst
);

# Auth with SECRET. Options: secret_len (the length field when it must
# differ), extra (bytes after the secret), plus req's.
sub req_auth {
    my ($secret, @o) = @_;
    my ($b, %o) = _split_opts(['secret_len'], @o);
    return req(OP_AUTH, pack('n', $b->{secret_len} // length $secret)
                        . $secret . ($b->{extra} // ''), %o);
}

# Throttle: charge UNITS to TENANT. Options: name_len, extra, plus req's.
sub req_throttle {
    my ($tenant, $units, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_THROTTLE, pack('N', $units) . _name_field($tenant, $b),
               %o);
}

# Tenant_show TENANT.
sub req_tenant_show {
    my ($tenant, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TENANT_SHOW, _name_field($tenant, $b), %o);
}

sub req_tenant_list { req(OP_TENANT_LIST, '', @_) }
sub req_node_show   { req(OP_NODE_SHOW, '', @_) }
sub req_unthrottle  { req(OP_UNTHROTTLE, '', @_) }
sub req_reload      { req(OP_RELOAD, '', @_) }

# Tenant_set TENANT: RESERVED and HARD_LIMIT, each undef when not set
# (its flag bit clear, 0 sent). Options: flags (the raw byte), pad (the 3
# bytes after it), name_len, extra, plus req's.
sub req_tenant_set {
    my ($tenant, $reserved, $hard, @o) = @_;
    my ($b, %o) = _split_opts([qw(flags pad)], @o);
    my $flags = $b->{flags} // ((defined $reserved ? SET_RESERVED : 0)
                                | (defined $hard ? SET_HARD_LIMIT : 0));
    return req(OP_TENANT_SET,
               pack('Ca3NN', $flags, $b->{pad} // "\0\0\0", $reserved // 0,
                    $hard // 0) . _name_field($tenant, $b), %o);
}

# Tenant_remove TENANT.
sub req_tenant_remove {
    my ($tenant, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TENANT_REMOVE, _name_field($tenant, $b), %o);
}

# Node_set CAPACITY. Options: extra, plus req's.
sub req_node_set {
    my ($capacity, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_NODE_SET, pack('N', $capacity) . ($b->{extra} // ''), %o);
}

# Tenant_set_json TENANT with the JSON document DOC (bytes, sent as they
# are). Options: name_len, plus req's.
sub req_tenant_set_json {
    my ($tenant, $doc, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_TENANT_SET_JSON, _name_field($tenant, $b) . $doc, %o);
}

# Node_set_json with the JSON document DOC (the whole body).
sub req_node_set_json {
    my ($doc, @o) = @_;
    return req(OP_NODE_SET_JSON, $doc, @o);
}

# The 24-byte throttle answer (state, reason, used, remaining,
# retry_after_ns).
sub throttle_answer_body { pack 'CCx2NNx4Q>', @_[0 .. 4] }

# The 32-byte tenant view (reserved, hard_limit, used, flags, throttled,
# units).
sub tenant_view_body { pack 'NNNCx3Q>Q>', @_[0 .. 5] }

# The 32-byte node view (capacity, used, pool, pool_used, reserved_sum,
# tenants, throttled).
sub node_view_body { pack 'NNNNNNQ>', @_[0 .. 6] }

# True when r is an OK answer whose body is n bytes long.
sub _ok_of_size {
    my ($r, $n) = @_;
    return $r && $r->{magic} == 0x91 && $r->{status} == ST_OK
           && length $r->{body} == $n;
}

# Parses a throttle answer (status 0, 24 bytes): a hash (state reason pad
# used remaining pad2 retry_after_ns), or undef when r is not one.
sub parse_throttle_answer {
    my ($r) = @_;
    return undef unless _ok_of_size($r, THROTTLE_ANSWER_SIZE);
    my ($state, $reason, $pad, $used, $rem, $pad2, $retry) =
        unpack 'CCa2NNa4Q>', $r->{body};
    return { state => $state, reason => $reason, pad => $pad,
             used => $used, remaining => $rem, pad2 => $pad2,
             retry_after_ns => $retry };
}

# Parses 32 bytes of a tenant view into a hash (reserved hard_limit used
# flags pad throttled units).
sub _tenant_view_of {
    my ($b) = @_;
    my ($res, $hard, $used, $flags, $pad, $thr, $units) =
        unpack 'NNNCa3Q>Q>', $b;
    return { reserved => $res, hard_limit => $hard, used => $used,
             flags => $flags, pad => $pad, throttled => $thr,
             units => $units };
}

# Parses a tenant_show answer (status 0, 32 bytes): see _tenant_view_of;
# undef when r is not one.
sub parse_tenant_view {
    my ($r) = @_;
    return undef unless _ok_of_size($r, TENANT_VIEW_SIZE);
    return _tenant_view_of($r->{body});
}

# Parses one record of a tenant_list (status 0, the view, name_len u16,
# the name): the view's hash plus name; undef when r is not one (the
# empty end marker included).
sub parse_tenant_record {
    my ($r) = @_;
    return undef unless $r && $r->{magic} == 0x91 && $r->{status} == ST_OK
                        && length $r->{body} >= TENANT_VIEW_SIZE + 2;
    my $nl = unpack 'n', substr($r->{body}, TENANT_VIEW_SIZE, 2);
    return undef unless length $r->{body} == TENANT_VIEW_SIZE + 2 + $nl;
    my $v = _tenant_view_of(substr $r->{body}, 0, TENANT_VIEW_SIZE);
    $v->{name} = substr $r->{body}, TENANT_VIEW_SIZE + 2;
    return $v;
}

# Parses a node_show answer (status 0, 32 bytes): a hash (capacity used
# pool pool_used reserved_sum tenants throttled), or undef.
sub parse_node_view {
    my ($r) = @_;
    return undef unless _ok_of_size($r, NODE_VIEW_SIZE);
    my @v = unpack 'NNNNNNQ>', $r->{body};
    my %h;
    @h{qw(capacity used pool pool_used reserved_sum tenants throttled)} = @v;
    return \%h;
}

# Writes text to path (replacing it); dies when it cannot.
sub write_file {
    my ($path, $text) = @_;
    open my $fh, '>', "$path.tmp" or die "$path.tmp: $!";
    binmode $fh;
    print {$fh} $text;
    close $fh or die "$path.tmp: $!";
    rename "$path.tmp", $path or die "rename to $path: $!";
}

# Starts mchost with counter.so for the throttling tests. Options: secret
# (the admin secret; written with a trailing newline unless secret_text
# gives the file's exact bytes), throttle (the text of a
# counter.throttle.config file), config (more keys), args. The files lie
# in a temporary directory of the test; the server carries secret,
# secret_file and throttle_file (undef when not configured) so a test can
# rewrite the settings file before a reload.
sub start_throttle_host {
    my (%o) = @_;
    my $dir = tempdir(CLEANUP => 1);
    my %cfg = (threads => 1, %{ $o{config} // {} });
    my ($secret_file, $throttle_file);
    if (defined $o{secret} || defined $o{secret_text}) {
        $secret_file = "$dir/admin.secret";
        write_file($secret_file, $o{secret_text} // "$o{secret}\n");
        $cfg{admin_secret_file} = $secret_file;
    }
    if (defined $o{throttle}) {
        $throttle_file = "$dir/throttle.conf";
        write_file($throttle_file, $o{throttle});
        $cfg{'throttle.config'} = $throttle_file;
    }
    my $srv = start_host(config => \%cfg, args => $o{args} // []);
    $srv->{secret} = $o{secret};
    $srv->{secret_file} = $secret_file;
    $srv->{throttle_file} = $throttle_file;
    return $srv;
}

# The engine's clock, as the server reads it: CLOCK_MONOTONIC, seconds.
sub mono_now { Time::HiRes::clock_gettime(Time::HiRes::CLOCK_MONOTONIC()) }

# Sleeps, when less than need seconds (default 0.5) are left of the
# current second of the engine's clock (or always with force), to just
# after the next one starts, so that a burst of requests sent next most
# likely falls in one second. Only makes that likely: tests still check
# (see throttle_burst), and never assert anything about time.
sub wait_fresh_second {
    my (%o) = @_;
    my $now = mono_now();
    my $left = 1 - ($now - int $now);
    return if !$o{force} && $left >= ($o{need} // 0.5);
    sleep($left + 0.01);
}

# Sends a burst of charges and reads their answers, making sure they all
# fell in one second of the server's clock. items: a list of [conn,
# tenant, units], and '|' where the answers so far must be read before
# the next charges go out (to order charges of different connections;
# between two bars, every connection's requests are written before any
# answer is read, and the server may take the connections in any order).
# The burst starts just after a second begins. The node's used figure is
# read (node_show on option observer, default the first item's
# connection) before and after; when the allowed units of the burst do
# not add up to its growth, a second boundary passed in the middle and the
# burst is sent again after the next second starts (at most option tries
# times, default 4). Returns a hash: answers (the parsed throttle answers
# of the last try, in item order without the bars, undef for a missing or
# malformed one), raw (the responses), tries, all (every [item, answer] of
# every try, for tests that count what the server counted), then (the
# answers to option then's requests, sent on the observer after the
# charges, so they read the same second; they must not charge), before and
# after (the node views) and same_second (false when no try fitted).
sub throttle_burst {
    my ($items, %o) = @_;
    my @items = grep { ref } @$items;
    my $obs = $o{observer} // $items[0][0];
    my (@all, $res);
    for my $try (1 .. $o{tries} // 4) {
        wait_fresh_second(force => 1);
        my $before = parse_node_view($obs->call(req_node_show()));
        my (@ans, @raw, @seg);
        my $i = 0;
        for my $it (@$items, '|') {
            if (ref $it) {
                push @seg, [$i++, $it];
                next;
            }
            _burst_segment(\@seg, \@ans, \@raw, \@all);
            @seg = ();
        }
        my @then;
        if ($o{then} && @{ $o{then} }) {
            $obs->send(join '', @{ $o{then} });
            @then = $obs->responses(scalar @{ $o{then} });
        }
        my $after = parse_node_view($obs->call(req_node_show()));
        my $allowed = 0;
        for my $k (0 .. $#items) {
            $allowed += $items[$k][2]
                if $ans[$k] && $ans[$k]{state} == THROTTLE_ALLOWED;
        }
        $res = { answers => \@ans, raw => \@raw, tries => $try,
                 all => \@all, then => \@then, before => $before,
                 after => $after };
        if ($before && $after &&
            $after->{used} == $before->{used} + $allowed) {
            $res->{same_second} = 1;
            return $res;
        }
        last unless $before && $after;
    }
    $res->{same_second} = 0;
    return $res;
}

# One part of a burst (seg: [index, item] pairs): writes each
# connection's charges at once, then reads the answers into ans, raw and
# all.
sub _burst_segment {
    my ($seg, $ans, $raw, $all) = @_;
    my (%per, @order);
    for my $p (@$seg) {
        my $c = $p->[1][0];
        push @order, $c unless $per{$c};
        push @{ $per{$c} }, $p;
    }
    for my $c (@order) {
        $c->send(join '', map {
            req_throttle($_->[1][1], $_->[1][2], opaque => $_->[0])
        } @{ $per{$c} });
    }
    for my $c (@order) {
        for my $p (@{ $per{$c} }) {
            my $r = $c->response;
            $raw->[$p->[0]] = $r;
            $ans->[$p->[0]] = parse_throttle_answer($r);
            push @$all, [$p->[1], $ans->[$p->[0]]];
        }
    }
}

# ---- Lease_list: the leases nearest to expiry ----

use constant { OP_LEASE_LIST => 0x24, LEASE_LIST_MAX => 64 };
push @KNOWN_OPCODES, OP_LEASE_LIST;
push @EXPORT, qw(OP_LEASE_LIST LEASE_LIST_MAX req_lease_list
                 parse_lease_record);

# Lease_list for count leases (a u32 body; count 0 is refused).
sub req_lease_list {
    my ($count, %o) = @_;
    return req(OP_LEASE_LIST, pack('N', $count), %o);
}

# A Lease_list record: { left_ms, lease_id, resources, name }; undef when
# the body is too short or its name runs past it.
sub parse_lease_record {
    my ($r) = @_;
    return undef unless $r && length $r->{body} >= 18;
    my ($left, $id, $res, $nl) = unpack 'NQ>Nn', $r->{body};
    return undef if 18 + $nl > length $r->{body};
    return { left_ms => $left, lease_id => $id, resources => $res,
             name => substr($r->{body}, 18, $nl) };
}

# ---- The busiest rate-limit names ----

use constant {
    OP_BUSIEST => 0x37,
    BUSIEST_MAX => 16,
    # The kind byte of a busiest record.
    KIND_TTL => 0, KIND_WINDOW => 1, KIND_GCRA => 2,
};

# Names of the kinds, indexed by the kind byte (counterctl's words).
our @KIND_NAME = qw(ttl window gcra);

push @EXPORT, qw(OP_BUSIEST BUSIEST_MAX KIND_TTL KIND_WINDOW KIND_GCRA
                 @KIND_NAME req_busiest parse_busy_record);

# Busiest COUNT. Options: extra (bytes after the count), plus req's.
sub req_busiest {
    my ($count, @o) = @_;
    my ($b, %o) = _split_opts([], @o);
    return req(OP_BUSIEST, pack('N', $count) . ($b->{extra} // ''), %o);
}

# Parses one busiest record (status 0: checks u32, kind u8, name_len u16,
# the name): a hash (checks kind name), or undef when r is not one (the
# empty end marker included).
sub parse_busy_record {
    my ($r) = @_;
    return undef unless $r && $r->{magic} == 0x91 && $r->{status} == ST_OK
                        && length $r->{body} >= 7;
    my ($checks, $kind, $nl) = unpack 'NCn', $r->{body};
    return undef unless length $r->{body} == 7 + $nl;
    return { checks => $checks, kind => $kind,
             name => substr($r->{body}, 7) };
}

package CounterTest::Server;

use strict;
use warnings;

# Opens a counter-protocol connection to this server.
sub connect {
    my ($self, %o) = @_;
    return CounterTest::Conn->new($o{port} // $self->{counter_port},
                                  $o{host});
}

# Text of the server's stderr so far.
sub stderr { CounterTest::_slurp("$_[0]{dir}/stderr") }

# Stops the server (TERM, then KILL) and reaps it.
sub stop {
    my ($self) = @_;
    CounterTest::kill_pid(delete $self->{pid}) if $self->{pid};
}

sub DESTROY { $_[0]->stop }

package CounterTest::Conn;

use strict;
use warnings;

use IO::Select;
use Socket qw(SOL_SOCKET SO_LINGER SHUT_WR IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(time);

# Connects to host:port (default 127.0.0.1); dies when it cannot.
sub new {
    my ($class, $port, $host) = @_;
    my $s = IO::Socket::IP->new(PeerHost => $host // '127.0.0.1',
                                PeerPort => $port, Timeout => $CounterTest::TIMEOUT)
        or die "connect to $port: $@";
    setsockopt $s, IPPROTO_TCP, TCP_NODELAY, 1;
    binmode $s;
    return bless { sock => $s, buf => '' }, $class;
}

# Writes all bytes (blocking; loopback peers read).
sub send {
    my ($self, $bytes) = @_;
    my $off = 0;
    while ($off < length $bytes) {
        my $n = syswrite $self->{sock}, $bytes, length($bytes) - $off, $off;
        die "write: $!" unless defined $n;
        $off += $n;
    }
    return $self;
}

# Reads more bytes into the buffer; 0 on EOF/reset, undef on timeout.
sub _fill {
    my ($self, $deadline) = @_;
    my $left = $deadline - time;
    return undef if $left <= 0;
    return undef unless IO::Select->new($self->{sock})->can_read($left);
    my $n = sysread $self->{sock}, $self->{buf}, 1 << 20, length $self->{buf};
    return $n ? $n : 0;
}

# Reads exactly one response: a hash (magic opcode status reserved
# body_len opaque body raw), or undef on EOF / timeout ($self->{error}).
sub response {
    my ($self, $timeout) = @_;
    my $deadline = time + ($timeout // $CounterTest::TIMEOUT);
    delete $self->{error};
    while (1) {
        if (length $self->{buf} >= 12) {
            my ($m, $op, $st, $rsv, $len, $opq) =
                unpack 'CCCCNN', $self->{buf};
            die sprintf("response body of %u bytes is not believable", $len)
                if $len > 16 << 20;
            if (length $self->{buf} >= 12 + $len) {
                my $raw = substr $self->{buf}, 0, 12 + $len, '';
                return { magic => $m, opcode => $op, status => $st,
                         reserved => $rsv, body_len => $len, opaque => $opq,
                         body => substr($raw, 12), raw => $raw };
            }
        }
        my $n = $self->_fill($deadline);
        # An explicit undef: callers pass answers straight into lists.
        if (!defined $n) { $self->{error} = 'timeout'; return undef }
        if ($n == 0)     { $self->{error} = 'eof'; return undef }
    }
}

# Reads n responses; stops early (shorter list) on EOF or timeout.
sub responses {
    my ($self, $n, $timeout) = @_;
    my @r;
    while (@r < $n) {
        my $r = $self->response($timeout) or last;
        push @r, $r;
    }
    return @r;
}

# Sends one request and returns its response.
sub call {
    my ($self, $bytes, $timeout) = @_;
    $self->send($bytes);
    my $r = $self->response($timeout);
    return $r;
}

# Reads the next answer (magic 0x91), setting aside the events that come
# first (see event); undef on EOF / timeout.
sub answer {
    my ($self, $timeout) = @_;
    while (1) {
        my $r = $self->response($timeout) // return undef;
        return $r unless CounterTest::is_event($r);
        push @{ $self->{events} }, $r;
    }
}

# Sends one request and returns its answer, setting aside events.
sub wcall {
    my ($self, $bytes, $timeout) = @_;
    $self->send($bytes);
    return $self->answer($timeout);
}

# The next packet that is an event: one set aside by answer, else the next
# one read (which the caller checks: an answer there is a failure); undef
# on EOF / timeout.
sub event {
    my ($self, $timeout) = @_;
    my $set = $self->{events};
    return shift @$set if $set && @$set;
    return $self->response($timeout);
}

# The next event, parsed (see CounterTest::parse_event); undef when the
# next packet is no event or nothing came within timeout.
sub next_event {
    my ($self, $timeout) = @_;
    return CounterTest::parse_event($self->event($timeout));
}

# True when no event is set aside and nothing arrives within timeout.
sub no_event_within {
    my ($self, $timeout) = @_;
    return 0 if $self->{events} && @{ $self->{events} };
    return $self->quiet_for($timeout);
}

# Sends Queues and reads the records up to the empty end marker; returns
# the records (consumption, waiting, name) and the raw answers. Events that
# arrive meanwhile are set aside (see event).
sub queue_records {
    my ($self, %o) = @_;
    $self->send(CounterTest::req_queues(opaque => $o{opaque} // 0));
    my (@rec, @raw);
    while (my $r = $self->answer) {
        push @raw, $r;
        last if $r->{body_len} == 0;
        my ($cons, $waiting, $nl) = unpack 'NNn', $r->{body};
        push @rec, { consumption => $cons, waiting => $waiting,
                     name => substr($r->{body}, 10, $nl) };
    }
    return wantarray ? (\@rec, \@raw) : \@rec;
}

# Reads Dump responses up to and including the empty terminator; returns
# the records (current, max, name) and the list of raw responses.
sub dump_records {
    my ($self, %o) = @_;
    $self->send(CounterTest::req_dump(opaque => $o{opaque} // 0));
    my (@rec, @raw);
    while (my $r = $self->response) {
        push @raw, $r;
        last if $r->{body_len} == 0;
        my ($cur, $max, $nl) = unpack 'NNn', $r->{body};
        push @rec, { current => $cur, max => $max,
                     name => substr($r->{body}, 10, $nl) };
    }
    return wantarray ? (\@rec, \@raw) : \@rec;
}

# Sends Stats and returns the pairs in order as [name, value] lists.
sub stats_pairs {
    my ($self) = @_;
    my $r = $self->call(CounterTest::req_stats()) or return;
    return CounterTest::Conn::parse_stats($r->{body});
}

# Splits a Stats body into [name, value] pairs.
sub parse_stats {
    my ($b) = @_;
    my @p;
    my $pos = 0;
    while ($pos + 4 <= length $b) {
        my ($nl, $vl) = unpack 'nn', substr($b, $pos, 4);
        push @p, [substr($b, $pos + 4, $nl), substr($b, $pos + 4 + $nl, $vl)];
        $pos += 4 + $nl + $vl;
    }
    return @p;
}

# True when the peer closes (EOF or reset) within timeout seconds; bytes
# that arrive first are kept in the buffer.
sub closed_within {
    my ($self, $timeout) = @_;
    my $deadline = time + ($timeout // $CounterTest::TIMEOUT);
    while (1) {
        my $n = $self->_fill($deadline);
        return 0 unless defined $n;
        return 1 if $n == 0;
    }
}

# True when nothing arrives within timeout seconds (connection still open).
sub quiet_for {
    my ($self, $timeout) = @_;
    return 0 if length $self->{buf};
    return IO::Select->new($self->{sock})->can_read($timeout) ? 0 : 1;
}

# Half-closes: no more requests, answers can still be read.
sub shutdown_write { shutdown $_[0]{sock}, SHUT_WR }

# Closes with SO_LINGER 0 so the peer sees a reset.
sub reset {
    my ($self) = @_;
    setsockopt $self->{sock}, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0);
    CORE::close $self->{sock};
}

# Sends busiest COUNT and reads the records up to the empty end marker
# (or an error status); returns the parsed records (see
# CounterTest::parse_busy_record; undef for a malformed one) and the raw
# answers.
sub busy_records {
    my ($self, $count, %o) = @_;
    $self->send(CounterTest::req_busiest($count, opaque => $o{opaque} // 0));
    my (@rec, @raw);
    while (my $r = $self->response) {
        push @raw, $r;
        last if $r->{body_len} == 0 || $r->{status} != CounterTest::ST_OK;
        push @rec, CounterTest::parse_busy_record($r);
    }
    return wantarray ? (\@rec, \@raw) : \@rec;
}

# Sends tenant_list and reads the records up to the empty end marker;
# returns the parsed records (see CounterTest::parse_tenant_record; undef
# for a malformed one) and the raw answers.
sub tenant_records {
    my ($self, %o) = @_;
    $self->send(CounterTest::req_tenant_list(opaque => $o{opaque} // 0));
    my (@rec, @raw);
    while (my $r = $self->response) {
        push @raw, $r;
        last if $r->{body_len} == 0 || $r->{status} != CounterTest::ST_OK;
        push @rec, CounterTest::parse_tenant_record($r);
    }
    return wantarray ? (\@rec, \@raw) : \@rec;
}

# Sends auth with secret and returns the answer.
sub auth {
    my ($self, $secret) = @_;
    return $self->call(CounterTest::req_auth($secret));
}

# Sends Lease_list for count leases and reads the records up to the empty
# end marker (or an error answer, which ends the list); returns the
# records (see parse_lease_record) and the raw answers. Events that arrive
# meanwhile are set aside.
sub lease_records {
    my ($self, $count, %o) = @_;
    $self->send(CounterTest::req_lease_list($count,
                                            opaque => $o{opaque} // 0));
    my (@rec, @raw);
    while (my $r = $self->answer) {
        push @raw, $r;
        last if $r->{body_len} == 0 || $r->{status} != CounterTest::ST_OK;
        push @rec, CounterTest::parse_lease_record($r);
    }
    return wantarray ? (\@rec, \@raw) : \@rec;
}

sub close { CORE::close $_[0]{sock} }

sub sock { $_[0]{sock} }

1;
