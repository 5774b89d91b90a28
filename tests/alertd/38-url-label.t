#!/usr/bin/perl
# airlock-alertd logs a sink by its URL without userinfo or path (a sink's
# URL has no query, the policy refuses one):
# a Slack or Teams webhook's path is its secret
# (https://hooks.slack.com/services/T.../B.../XXXX), and alertd logged it
# whole at every retry, where a log shipper or anyone who reads the
# journal could take it.  The path's place holds "/..." and a 24-bit hash
# of it, which tells two sinks on one host apart.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;

my $hook = $t->secret('hook', 'url-label-test-0123456789abcdef');

# nothing listens there: every attempt is refused and logged
my $port = $t->free_port;
my $path = '/services/T0AAAAAAA/B0BBBBBBB/s3cr3tPathToken0123';
my $url = "http://127.0.0.1:$port$path";
my $other = "http://127.0.0.1:$port/services/T0AAAAAAA/B0BBBBBBB/another";

$t->policy({ webhook => $url, secret => 'hook' },
           { webhook => $other, secret => 'hook' });

my $pid = $t->alertd('--attempt-timeout', '1s');
ok($pid && $t->alertd_log !~ /\berror: /, 'alertd starts')
    or diag($t->alertd_log);

my $id = $t->alert(client => 'agent');
my $label = AlertdTest::label($url);
ok($t->log_has(qr/\Q$label\E: alert \Q$id\E not delivered/),
   'a failed attempt is logged with the sink as host and a hash')
    or diag($t->alertd_log);
like($label, qr{^http://127\.0\.0\.1:\d+/\.\.\.#[0-9a-f]{6}$},
     'the label: scheme, host, port, "/..." and the hash');

my $log = $t->alertd_log;
unlike($log, qr/s3cr3tPathToken/, 'the path\'s secret is not logged');
unlike($log, qr{/services/}, 'nor any of the path');
isnt(AlertdTest::label($other), $label,
     'two sinks on one host are told apart');
ok($t->log_has(qr/\Q${\ AlertdTest::label($other)}\E: alert \Q$id\E not /),
   'and the second is logged by its own');

$t->done;
