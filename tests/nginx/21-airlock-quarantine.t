#!/usr/bin/perl

# ngx_http_airlock_module: quarantine.  alerts.quarantine denials of one
# client within the window cut it off for "for": every request, allowed
# routes included, is refused with reason "quarantined", and the start is a
# critical "quarantine" alert in the journal.  Refusals during the
# quarantine are logged but do not extend it.  Afterwards the client is let
# back, with a fresh count.  Other clients and unknown peers are never
# affected.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my %tok = map { $_ => "token-$_-0123456789" } qw(q r);
# clients q and r on GET /ok; quarantined at 3 denials in 4s, for 3s
$p->echo_policy(tokens => \%tok, threshold => 100,
                quarantine => 'threshold: 3, window: 4s, for: 3s');

$t->write_file_expand('nginx.conf',
                      $p->conf(http => $p->zone_status_http('1m')));

$t->start_echo(8081);
$t->run;

plan tests => 26;

my $json = JSON::PP->new->utf8;

sub get {
    my ($who, $path) = @_;
    my $h = $who ? { 'Proxy-Authorization' => "Bearer $tok{$who}" } : {};
    return http_get($path, headers => $h);
}

sub journal {
    my $text = $t->read_file('journal.log') // '';
    return map { $json->decode($_) } grep { length } split /\n/, $text;
}

sub quarantines {
    return grep { $_->{type} eq 'alert' && $_->{kind} eq 'quarantine' }
           journal();
}

sub status { parse_response($_[0])->{status} }

sub status_json {
    return json_body(http_get('/status', port => 8082));
}

is(status(get('q', '/ok')), 200, 'q: allowed');

get('q', '/nope');
get('q', '/nope/2');
is(status(get('q', '/ok')), 200, 'threshold - 1 denials: still allowed');
is(scalar quarantines(), 0, 'no quarantine yet');

get('q', '/nope/3');

my @q = quarantines();
is(scalar @q, 1, 'threshold-th denial: a quarantine alert');
is($q[0]{client}, 'q', 'quarantine: client');
is($q[0]{severity}, 'critical', 'quarantine: critical');
is($q[0]{reason}, 'no_route', 'quarantine: the crossing reason');
is($q[0]{count}, 3, 'quarantine: count');
is($q[0]{window}, 4, 'quarantine: window');
like($q[0]{id}, qr/^[0-9a-f]{32}$/, 'quarantine: id');

my $until = iso_ms($q[0]{quarantine_until}) - iso_ms($q[0]{time});
cmp_ok(abs($until - 3000), '<', 50, 'quarantine_until is "for" away');

my $before = $p->echo_count;
my $r = get('q', '/ok');
is_deeply(deny_json($r), [ 403, 'quarantined' ],
          'quarantined: an allowed route is refused');
is($p->echo_count, $before, 'quarantined: the upstream saw nothing');
is(status(get('r', '/ok')), 200, 'another client is not affected');

my $s = status_json();
is_deeply([ map { [ $_->{client}, $_->{reason} ] } @{$s->{quarantined}} ],
          [ [ 'q', 'no_route' ] ], 'status: q quarantined for no_route');

# refusals during the quarantine do not extend it

# (a loaded machine may make the last of them come after the quarantine:
# the refusals counted are those answered "quarantined", and a denial
# after it counts in a new window, which the fresh count below waits out)
my ($refused, $late) = (1, 0);
for (1 .. 6) {
    my $d = deny_json(get('q', $_ % 2 ? '/ok' : '/nope'));
    $refused++ if ($d->[1] // '') eq 'quarantined';
    $late = time if ($d->[1] // '') eq 'no_route';
    sleep 0.25;
}

my @deny = grep { $_->{type} eq 'deny' && $_->{client} eq 'q' } journal();
is(scalar(grep { $_->{reason} eq 'quarantined' } @deny), $refused,
   'refusals during the quarantine are logged');
is(scalar quarantines(), 1, 'and start no new quarantine');

# past the end the alert gave (the same clock as nginx's), not past a
# time measured here before the request that started it
my $left = iso_ms($q[0]{quarantine_until}) / 1000 + 0.3 - time;
sleep $left if $left > 0;

is(status(get('q', '/ok')), 200, 'after "for": let back');
is(scalar @{status_json()->{quarantined}}, 0, 'status: none quarantined');

# a fresh count: one denial does not quarantine again

$left = $late + 4.3 - time;
sleep $left if $late && $left > 0;

get('q', '/nope');
is(status(get('q', '/ok')), 200, 'one denial after the quarantine: allowed');
is(scalar quarantines(), 1, 'no new quarantine');

get('q', '/nope') for 1 .. 2;
is(deny_json(get('q', '/ok'))->[1], 'quarantined', 'three more: again');
is(scalar quarantines(), 2, 'a second quarantine alert');

# unknown clients are counted, never quarantined

get(undef, '/nope') for 1 .. 4;
is(scalar(grep { !defined $_->{client} } quarantines()), 0,
   'an unknown peer is never quarantined');
is(deny_json(get(undef, '/ok'))->[1], 'client_unknown',
   'an unknown peer stays client_unknown');

is($t->error_log_check, '', 'no alerts');


sub iso_ms {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $se, $ms) =
        $s =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)Z$/ or return -1;
    require Time::Local;
    return Time::Local::timegm($se, $mi, $h, $d, $mo - 1, $y) * 1000 + $ms;
}
