#!/usr/bin/perl
# airlockctl diff shows every line whole, however long the policy's text
# in it: a grant whose new pattern comes after a long old one, a JSON
# field of a long name, nested.  A cut line would show a '+' without
# what it grants (the new pattern lost past the line's end), or two
# different fields as one.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

sub run {
    my $cmd = join ' ', map { quotemeta } $ctl, @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

sub policy {
    my ($pattern, $field) = @_;
    return <<"Y";
version: 1
clients:
  agent: { unix_uid: 1000 }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: r
    clients: [agent]
    match: { method: GET, path: "/r/{x}" }
    params: { x: '$pattern' }
    upstream: up
    to: /r
  - name: w
    clients: [agent]
    match: { method: POST, path: /w }
    upstream: up
    to: /w
    body:
      max_bytes: 1000
      content_type: application/json
      json:
        outer:
          type: object
          fields: { $field: { type: object, fields: { inner: '^a\$' } } }
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

my $long = 'a' x 1200;
my $name = 'f' x 300;
my $old = write_file('old.yaml', policy("^$long\$", $name));
my $new = write_file('new.yaml', policy("^$long\$|^admin\$",
                                        "${name}: { type: object }, g"));

my ($rc, $out) = run('diff', $old, $new);
is($rc, 1, 'a widened pattern is a grant') or diag($out);

my ($line) = grep { /param x pattern/ } split /\n/, $out;
ok(defined $line, 'the pattern change has its line') or diag($out);
$line //= '';
like($line, qr/^\+ /, 'a + line');
like($line, qr/\Q^$long\E\$.* -> .*\Q^$long\E\$\|\^admin\$/,
     'the old pattern and the new one, whole')
    or diag(length($line) . ' bytes: ...' . substr($line, -80));

# outer.<300 f>.inner is no longer checked (the field is an object with
# no fields now), and a field g was added beside it
like($out, qr/^[-+] route w: body\.outer\.\Q$name\E\.inner no longer checked$/m,
     'a field under a long name: its whole path')
    or diag($out);
like($out, qr/^[-+] route w: body\.outer\.g field added$/m,
     'the other field, named apart') or diag($out);

done_testing();
