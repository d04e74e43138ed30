# 10-config-files.t: counter.config naming something that is not a regular
# configuration file. /dev/zero has no line ends and never ends: the parser
# must refuse it with a message naming counter.config, not read it until
# memory runs out and then start with what it had (bug found 2026-11-22:
# getline's ENOMEM was taken for end of file); a FIFO must not block
# start-up. A value too long for the message must not hide the key. Runs the host under a 400 MB address-space
# limit, so only with a build without ASan.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use File::Temp qw(tempdir);
use Hostile;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host();
open my $bin, '<:raw', $ENV{MCHOST} or die "$ENV{MCHOST}: $!";
my $image = do { local $/; <$bin> };
plan skip_all => 'ASan build: its shadow memory cannot run under ulimit -v'
    if index($image, '__asan_init') >= 0 || index($image, '__tsan_init') >= 0;

# A wrapper that runs the host with a bounded address space.
my $dir = tempdir(CLEANUP => 1);
open my $w, '>', "$dir/mchost" or die "$dir: $!";
print {$w} "#!/bin/sh\nulimit -v 400000\nexec '$ENV{MCHOST}' \"\$@\"\n";
close $w;
chmod 0755, "$dir/mchost";
local $ENV{MCHOST} = "$dir/mchost";

# Refused at once (it is not a regular file), not read until memory runs out.
my ($st, $err) = run_host(config => 'counter.enable=true;counter.port=0;'
                                    . 'counter.config=/dev/zero', timeout => 15);
ok(defined $st && $st != 0, 'counter.config=/dev/zero: the host refuses to start');
like($err, qr/counter\.config: "\/dev\/zero" is a character device/,
     'and the message names the setting and the file');

# A FIFO nobody writes to must not block start-up in open().
my $fifo = "$dir/fifo";
system('mkfifo', $fifo) == 0 or die "mkfifo: $?";
($st, $err) = run_host(config => "counter.enable=true;counter.port=0;"
                                 . "counter.config=$fifo", timeout => 15);
ok(defined $st && $st != 0, 'counter.config=FIFO: the host exits non-zero')
    or diag 'status ' . ($st // 'none (blocked, had to be killed)');
like($err, qr/counter\.config: "\Q$fifo\E" is a FIFO/,
     'and the message names the setting and the FIFO');

# A regular file with one enormous line is refused after its first 4 KiB.
open my $f, '>', "$dir/huge.conf" or die;
print {$f} 'counter.bind = ' . ('1' x (8 << 20)) . "\n";
close $f;
($st, $err) = run_host(config => "counter.enable=true;counter.port=0;"
                                 . "counter.config=$dir/huge.conf", timeout => 15);
ok(defined $st && $st != 0, 'an 8 MB line: the host exits non-zero');
# The line's start (its key) is quoted, cut short, with file and line.
like($err, qr/huge\.conf:1: line longer than 4096 bytes: "counter\.bind = 1{49}\.\.\."/,
     'and the message names the file, the line and counter.bind');

# A value too long for the message cannot push the key out of it.
($st, $err) = run_host(raw_x => "$ENV{COUNTER_SO},counter.enable=true;"
                                . 'counter.port=' . ('9' x 100_000), timeout => 15);
ok(defined $st && $st != 0, 'a 100 kB value: the host exits non-zero');
like($err, qr/counter\.port: invalid value "9{64}\.\.\." \(expected 0\.\.65535\)/,
     'and the message names counter.port before the cut value');
done_testing;
