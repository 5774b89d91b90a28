#!/usr/bin/perl
# airlockctl seal, explain --token-stdin and explain --body on an input
# that cannot be read say why (the system's reason), and only an input
# over the limit is said to be too large: a directory or a closed
# standard input was "cannot read the secret (more than 65536 bytes?)",
# which sent the operator looking at the secret's size.  Exit status 2
# either way; nothing is sealed.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $dir = tempdir(CLEANUP => 1);

absent("$ctl not built") unless -x $ctl;

system("\Q$ctl\E keygen \Q$dir/k\E >/dev/null 2>&1") == 0 or die "keygen";

open my $fh, '>', "$dir/p.yaml" or die;
print $fh <<'Y';
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
upstreams:
  up: { url: "http://127.0.0.1:9" }
routes:
  - name: r
    clients: [agent]
    match: { method: POST, path: /x }
    upstream: up
    to: /y
    body: { max_bytes: 100, content_type: application/json }
alerts:
  deny: { threshold: 3, window: 60s }
Y
close $fh;

# runs airlockctl with standard input from $in (a shell redirection);
# returns (exit status, stdout, stderr)
sub run {
    my ($in, @args) = @_;
    my $cmd = join(' ', map { "\Q$_\E" } $ctl, @args);
    system("$cmd $in >\Q$dir/out\E 2>\Q$dir/err\E");
    my $rc = $? >> 8;
    local $/;
    open my $o, '<', "$dir/out" or die;
    open my $e, '<', "$dir/err" or die;
    return ($rc, scalar(<$o>) // '', scalar(<$e>) // '');
}

my ($rc, $out, $err);

($rc, $out, $err) = run("<\Q$dir\E", 'seal', '--pub', "$dir/k.pub");
is($rc, 2, 'seal < a directory: exit 2');
like($err, qr/^airlockctl: cannot read the secret: Is a directory$/m,
     'and says why');
unlike($err, qr/more than|over \d+ bytes/, 'not that it is too large');
is($out, '', 'nothing sealed');

($rc, undef, $err) = run('<&-', 'seal', '--pub', "$dir/k.pub");
is($rc, 2, 'seal with standard input closed: exit 2');
like($err, qr/^airlockctl: cannot read the secret: Bad file descriptor$/m,
     'and says why');

open $fh, '>', "$dir/big" or die;
print $fh 'a' x 70000;
close $fh;
($rc, $out, $err) = run("<\Q$dir/big\E", 'seal', '--pub', "$dir/k.pub");
is($rc, 2, 'seal of 70000 bytes: exit 2');
like($err, qr/^airlockctl: the secret is over 65536 bytes$/m,
     'said to be too large');
is($out, '', 'nothing sealed');

($rc, undef, $err) = run("<\Q$dir\E", 'explain', "$dir/p.yaml",
                         '--token-stdin', '--addr', '127.0.0.1', 'POST',
                         '/x');
is($rc, 2, 'explain --token-stdin < a directory: exit 2');
like($err, qr/^airlockctl: cannot read the token from standard input: Is a directory$/m,
     'and says why');

($rc, undef, $err) = run("<\Q$dir/big\E", 'explain', "$dir/p.yaml",
                         '--token-stdin', '--addr', '127.0.0.1', 'POST',
                         '/x');
is($rc, 2, 'explain --token-stdin of 70000 bytes: exit 2');
like($err, qr/^airlockctl: the token on standard input is over 65536 bytes$/m,
     'said to be too large');

($rc, undef, $err) = run('', 'explain', "$dir/p.yaml", '--client', 'agent',
                         'POST', '/x', '--body', $dir);
is($rc, 2, 'explain --body a directory: exit 2');
like($err, qr/^airlockctl: cannot read \Q$dir\E: Is a directory$/m,
     'and says why');

done_testing();
