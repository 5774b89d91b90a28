#!/usr/bin/perl

# ngx_http_airlock_module: a request nginx refuses before the decision
# (Content-Length with Transfer-Encoding: 400) that carries a token naming
# no client, from a peer that names one, is logged and counted under its
# peer as a decided request with such a token is (client_unknown), with
# reason "refused" and no client.  It was left out, so the peer of a
# client of the policy could send its framing attacks unseen: no deny
# line, no journal line, no alert, a made-up token in each.
#
# The old code fails the tests marked (old).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

# client "local" is 127.0.0.1; the second denial in a minute alerts
$p->echo_policy(threshold => 2);

$t->write_file_expand('nginx.conf', $p->conf(http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
EOF

$t->start_echo(8081);
$t->run;

plan tests => 9;

sub smuggle {
    my ($auth) = @_;
    return "POST /ok HTTP/1.1\r\nHost: x\r\n$auth"
           . "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"
           . "Connection: close\r\n\r\n0\r\n\r\n";
}

# the deny log's lines, once it has $n (the refusals' lines are written
# in the log phase, after the answer)
sub denials {
    my ($n) = @_;
    my @l;

    for (1 .. 50) {
        @l = $p->deny_log;
        last if @l >= $n;
        select undef, undef, undef, 0.1;
    }

    return @l;
}

my $r = parse_response(http(smuggle('')));
is($r->{status}, 400, 'framing attack: nginx answers 400');

$r = parse_response(http(smuggle("Proxy-Authorization: Bearer "
                                 . "made-up-FAKE\r\n")));
is($r->{status}, 400, 'with a made-up token: 400');

my @l = denials(2);
is(scalar @l, 2, 'both logged (old)');
is($l[0]{client}, 'local', 'without a token: the peer\'s client');
ok(@l > 1 && !defined $l[1]{client} && $l[1]{reason} eq 'refused',
   'with a made-up token: no client, reason refused (old)');

# counted under the peer, as a decided request with such a token is: the
# second denial of the peer raises an alert

$r = parse_response(http(smuggle("Proxy-Authorization: Bearer "
                                 . "made-up-FAKE\r\n")));
is($r->{status}, 400, 'again: 400');

my @alerts;

for (1 .. 50) {
    @alerts = grep { $_->{type} eq 'alert' }
              Airlock::Test::json_lines($t->read_file('journal.log') // '');
    last if @alerts;
    select undef, undef, undef, 0.1;
}

is(scalar @alerts, 1, 'the peer\'s second refusal alerts (old)');
is($alerts[0] && $alerts[0]{peer}, '127.0.0.1', 'under its peer (old)');

is($t->error_log_check, '', 'no alerts');
