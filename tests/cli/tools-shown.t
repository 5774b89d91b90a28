#!/usr/bin/perl
# tools prints its JSON with every character outside printable ASCII as
# a \uXXXX escape, the same JSON to a reader.  A route's description may
# hold any character a YAML escape makes: jansson escaped the C0
# controls but wrote DEL, the C1 controls (0x9b is a CSI to some
# terminals) and U+202E RIGHT-TO-LEFT OVERRIDE as they were, to the
# operator's terminal, where the override reorders what follows it.

use strict;
use warnings;
use FindBin;
use JSON::PP;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $policy = write_file('policy.yaml', <<'Y');
version: 1
clients:
  agent: { unix_uid: 1000 }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: one
    description: "a\u202eb\x7fc\u009bd\U0001F600e\u00e9f\e[2Jg"
    clients: [agent]
    match: { method: GET, path: "/one/{id}" }
    params: { id: "^[^\u202e]+$" }
    upstream: up
    to: "/one/{id}"
alerts:
  deny: { threshold: 3, window: 60s }
Y

my $want = "a\x{202e}b\x{7f}c\x{9b}d\x{1F600}e\x{e9}f\e[2Jg";

plan tests => 6;

for my $format ('openai', 'mcp') {
    my ($rc, $out) = run_ctl('tools', $policy, '--client', 'agent',
                             '--format', $format);

    is($rc, 0, "$format: exit 0");

    ok($out =~ /\A[\x20-\x7e\n]*\z/,
       "$format: printable ASCII and newlines only")
        or diag(join ' ', map { sprintf '%02x', ord }
                          grep { /[^\x20-\x7e\n]/ } split //, $out);

    my $j = eval { JSON::PP->new->utf8->decode($out) };
    my $tool = $format eq 'mcp' ? $j && $j->{tools}[0]
             : $j && $j->[0]{function};
    my $schema = $format eq 'mcp' ? $tool && $tool->{inputSchema}
               : $tool && $tool->{parameters};

    is_deeply([ $tool && substr($tool->{description}, 0, length $want),
                $schema && $schema->{properties}{params}{properties}{id}
                                  {pattern} ],
              [ $want, "^[^\x{202e}]+\$" ],
              "$format: the same JSON, description and pattern whole");
}
