#!/usr/bin/perl
# airlockctl diff, the gate a policy change passes in CI: a secret that
# takes another secret's credential grants ('+', exit 1).  A sealed
# value copied from another secret ("rotating" the low-value token of a
# route to a less trusted upstream into the sealed value of the
# high-value one), two secrets swapped, and a file: secret pointed at
# another file (another secret's, or the appliance's private key) all
# showed as '~' ("changed (rotated)", "changed (another file)"), exit 0:
# the change passed the gate and the other credential went to the
# route's upstream.  A new sealed value of the secret's own stays '~'.
# The sealed values are compared as text, never opened, and not shown.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 20;

# sealed values as airlockctl seal makes them: base64, random
my $low = 'RkFLRS1sb3ctdmFsdWUtdG9rZW4tc2VhbGVkLWFhYWFhYWFhYWFh';
my $high = 'RkFLRS1oaWdoLXZhbHVlLXRva2VuLXNlYWxlZC1iYmJiYmJiYmJi';
my $fresh = 'RkFLRS1sb3ctdmFsdWUtdG9rZW4tcm90YXRlZC1jY2NjY2NjY2Nj';

sub policy {
    my ($name, %s) = @_;
    return write_file($name, <<"Y");
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  low: $s{low}
  high: $s{high}
upstreams:
  pastebin: { url: "http://127.0.0.1:9090" }
  github: { url: "https://api.github.com" }
routes:
  - name: paste
    clients: [agent]
    match: { method: GET, path: /paste }
    upstream: pastebin
    to: /paste
    inject: { X-Token: "{low}" }
  - name: prs
    clients: [agent]
    match: { method: GET, path: /prs }
    upstream: github
    to: /pulls
    inject: { Authorization: "Bearer {high}" }
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

my $old = policy('old.yaml', low => qq({ sealed: "$low" }),
                 high => qq({ sealed: "$high" }));

sub diff {
    my ($what, %s) = @_;
    my $new = policy('new.yaml', %s);
    my ($rc, $out) = run_ctl('check', $new);
    is($rc, 0, "$what: the new policy is valid") or diag($out);
    return run_ctl('diff', $old, $new);
}

my ($rc, $out);

# the copy

($rc, $out) = diff('copy', low => qq({ sealed: "$high" }),
                   high => qq({ sealed: "$high" }));
is($rc, 1, 'copy: a grant, exit 1');
like($out, qr/^\+ secret low: now the sealed value of secret high\b/m,
     'copy: "+", naming the secret copied');
unlike($out, qr/\Q$high\E/, 'copy: the sealed value is not shown');

# the swap

($rc, $out) = diff('swap', low => qq({ sealed: "$high" }),
                   high => qq({ sealed: "$low" }));
is($rc, 1, 'swap: a grant, exit 1');
like($out, qr/^\+ secret low: now the sealed value of secret high\b/m,
     'swap: low has high\'s credential');
like($out, qr/^\+ secret high: now the sealed value of secret low\b/m,
     'swap: high has low\'s credential');

# a rotation

($rc, $out) = diff('rotation', low => qq({ sealed: "$fresh" }),
                   high => qq({ sealed: "$high" }));
is($rc, 0, 'rotation: no grant, exit 0') or diag($out);
like($out, qr/^~ secret low changed \(rotated\)$/m, 'rotation: "~"');

# a file: secret pointed at another file

my $fold = policy('fold.yaml', low => '{ file: /run/credentials/x/low }',
                  high => '{ file: /run/credentials/x/high }');

sub fdiff {
    my ($what, %s) = @_;
    my $new = policy('new.yaml', %s);
    my ($c, $o) = run_ctl('check', $new);
    is($c, 0, "$what: the new policy is valid") or diag($o);
    return run_ctl('diff', $fold, $new);
}

($rc, $out) = fdiff('private key', low => '{ file: /etc/airlock/airlock.key }',
                    high => '{ file: /run/credentials/x/high }');
is($rc, 1, 'another file: a grant, exit 1');
like($out, qr{^\+ secret low: file /run/credentials/x/low -> file (?#
              )/etc/airlock/airlock\.key: }m, 'another file: both paths');

($rc, $out) = fdiff('file copy', low => '{ file: /run/credentials/x/high }',
                    high => '{ file: /run/credentials/x/high }');
is($rc, 1, 'another secret\'s file: a grant, exit 1');
like($out, qr{^\+ secret low: file /run/credentials/x/low -> file (?#
              )/run/credentials/x/high \(the file of secret high\)}m,
     'another secret\'s file: named');

# sealed to a file, and a file to another secret's sealed value

($rc, $out) = diff('to a file', low => '{ file: /etc/airlock/airlock.key }',
                   high => qq({ sealed: "$high" }));
like($out, qr{^\+ secret low: sealed -> file /etc/airlock/airlock\.key: }m,
     'sealed to a file: "+" with the path');

($rc, $out) = run_ctl('diff', $fold,
                      policy('new.yaml', low => qq({ sealed: "$high" }),
                             high => '{ file: /run/credentials/x/high }'));
like($out, qr/^~ secret low: now sealed \(was file \S+\)$/m,
     'a file to a sealed value of its own: "~"');
