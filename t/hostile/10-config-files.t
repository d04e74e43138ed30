# 10-config-files.t: counter.config naming something that is not a regular
# configuration file. /dev/zero has no line ends and never ends: the parser
# must refuse it with a message naming counter.config, not read it until
# memory runs out and then start with what it had (bug found 2026-11-22:
# getline's ENOMEM was taken for end of file). A value too long for the
# message must not hide the key. Runs the host under a 400 MB address-space
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

TODO: {
    local $TODO = 'engine/configuration.c reads any file to the end (see report)';
    my ($st, $err) = run_host(config => 'counter.enable=true;counter.port=0;'
                                        . 'counter.config=/dev/zero', timeout => 15);
    ok(defined $st && $st != 0, 'counter.config=/dev/zero: the host refuses to start');
    like($err, qr/counter\.config|\/dev\/zero/, 'and the message names the setting');
}

# A regular file with one enormous line is read and refused cleanly.
open my $f, '>', "$dir/huge.conf" or die;
print {$f} 'counter.bind = ' . ('1' x (8 << 20)) . "\n";
close $f;
my ($st, $err) = run_host(config => "counter.enable=true;counter.port=0;"
                                    . "counter.config=$dir/huge.conf", timeout => 15);
ok(defined $st && $st != 0, 'an 8 MB line: the host exits non-zero');
TODO: {
    # Bug found 2026-11-22: messages print the value before the key, and
    # the error buffer cuts a long value and the key after it.
    local $TODO = 'engine/configuration.c: key after a long value is cut off';
    like($err, qr/counter\.bind/, 'and the message names counter.bind');
}
done_testing;
