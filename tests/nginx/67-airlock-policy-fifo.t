#!/usr/bin/perl

# ngx_http_airlock_module: a FIFO in place of the policy file fails
# "nginx -t" at once, as a directory does, with the file named; the load
# never waits for a writer (it used to block in open() until one came).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX qw(mkfifo);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $d = $t->testdir;

$t->write_file_expand('nginx.conf', $p->conf);
mkfifo("$d/policy.yaml", 0600) or die "mkfifo: $!";

plan tests => 6;

# nginx -t; a FIFO still blocking the load after a minute (a safety net,
# not a measure) gets a writer, so the run ends either way
my $unblocked = 0;
local $SIG{ALRM} = sub {
    $unblocked = 1;
    if (open(my $w, '>', "$d/policy.yaml")) {
        close $w;
    }
};

alarm 60;
my ($status, $out) = $t->reload_test;
alarm 0;

isnt($status, 0, 'a FIFO policy: nginx -t fails');
like($out, qr{\[emerg\] .*\Q$d\E/policy\.yaml: not a regular file},
     'a FIFO policy: the file named, not a regular file') or diag($out);
ok(!$unblocked, 'a FIFO policy: refused without waiting for a writer');

unlink "$d/policy.yaml";
mkdir "$d/policy.yaml" or die "mkdir: $!";

($status, $out) = $t->reload_test;
isnt($status, 0, 'a directory: nginx -t fails');
like($out, qr{\Q$d\E/policy\.yaml: not a regular file},
     'a directory: not a regular file') or diag($out);

rmdir "$d/policy.yaml";
$p->echo_policy;
($status, $out) = $t->reload_test;
is($status, 0, 'a policy file again: nginx -t passes') or diag($out);
