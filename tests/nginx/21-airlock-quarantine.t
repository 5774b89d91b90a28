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

# the times (ms, nginx's clock: the journal's) of q's denials counted
sub q_denials {
    return map { iso_ms($_->{time}) }
           grep { $_->{type} eq 'deny' && ($_->{client} // '') eq 'q'
                  && $_->{reason} ne 'quarantined' } journal();
}

# Three denials of q and the checks of the quarantine they start, made
# by &$try: they stand when the denials came within 3.6 s by nginx's
# clock (a denial counts for 15/16 of the 4 s window at the least) and
# every answer was read before the end the alert gives (so nginx
# decided each within the quarantine).  A loaded machine may hold them
# up past either: then, once the quarantine or the count is over, the
# try is made again (five times at most).  Returns &$try's value and its new
# quarantine alerts.
sub quarantine_try {
    my ($try) = @_;
    my ($res, @new);

    for my $n (1 .. 5) {
        my @before = q_denials();
        my $alerts = () = quarantines();

        $res = $try->();

        my @d = q_denials();
        splice @d, 0, scalar @before;
        @new = quarantines();
        splice @new, 0, $alerts;

        my $until = @new ? iso_ms($new[-1]{quarantine_until}) / 1000 : undef;
        last if $n == 5
                || (@d >= 3 && $d[-1] - $d[-3] < 3600
                    && defined $until && time < $until);

        # past the quarantine, and past the count of denials after it
        my $end = defined $until ? $until + 0.3 : 0;
        $end = ($d[-1] + 4100) / 1000 if @d && ($d[-1] + 4100) / 1000 > $end;
        my $left = $end - time;
        sleep $left if $left > 0;
    }

    return ($res, @new);
}

my ($got, @q) = quarantine_try(sub {
    my %got;
    $got{first} = status(get('q', '/ok'));

    get('q', '/nope');
    get('q', '/nope/2');
    $got{two} = status(get('q', '/ok'));
    $got{none} = () = quarantines();

    get('q', '/nope/3');

    my $before = $p->echo_count;
    $got{refused} = deny_json(get('q', '/ok'));
    $got{echo} = $p->echo_count - $before;
    $got{other} = status(get('r', '/ok'));
    $got{status} = status_json();
    return \%got;
});

is($got->{first}, 200, 'q: allowed');
is($got->{two}, 200, 'threshold - 1 denials: still allowed');
is($got->{none}, scalar(quarantines()) - @q, 'no quarantine yet');

is(scalar @q, 1, 'threshold-th denial: a quarantine alert');
is($q[0]{client}, 'q', 'quarantine: client');
is($q[0]{severity}, 'critical', 'quarantine: critical');
is($q[0]{reason}, 'no_route', 'quarantine: the crossing reason');
is($q[0]{count}, 3, 'quarantine: count');
is($q[0]{window}, 4, 'quarantine: window');
like($q[0]{id}, qr/^[0-9a-f]{32}$/, 'quarantine: id');

my $until = iso_ms($q[0]{quarantine_until}) - iso_ms($q[0]{time});
cmp_ok(abs($until - 3000), '<', 50, 'quarantine_until is "for" away');

is_deeply($got->{refused}, [ 403, 'quarantined' ],
          'quarantined: an allowed route is refused');
is($got->{echo}, 0, 'quarantined: the upstream saw nothing');
is($got->{other}, 200, 'another client is not affected');

my $s = $got->{status};
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

my ($start, $end) = map { iso_ms($q[0]{$_}) } qw(time quarantine_until);
my @deny = grep { $_->{type} eq 'deny' && $_->{client} eq 'q'
                  && iso_ms($_->{time}) >= $start } journal();
is(scalar(grep { $_->{reason} eq 'quarantined' } @deny), $refused,
   'refusals during the quarantine are logged');
is(scalar(grep { $_->{id} ne $q[0]{id} && iso_ms($_->{time}) >= $start
                 && iso_ms($_->{time}) < $end } quarantines()), 0,
   'and start no new quarantine');

# past the end the alert gave (the same clock as nginx's), not past a
# time measured here before the request that started it; and past the
# end of a quarantine that denials after it (a loaded machine's) started
my $left = iso_ms((quarantines())[-1]{quarantine_until}) / 1000 + 0.3 - time;
sleep $left if $left > 0;

is(status(get('q', '/ok')), 200, 'after "for": let back');
is(scalar @{status_json()->{quarantined}}, 0, 'status: none quarantined');

# a fresh count: one denial does not quarantine again

$left = $late + 4.3 - time;
sleep $left if $late && $left > 0;

(my $again, @q) = quarantine_try(sub {
    my $n = () = quarantines();
    get('q', '/nope');
    my $one = status(get('q', '/ok'));
    my $none = quarantines() - $n;
    get('q', '/nope') for 1 .. 2;
    return [ $one, $none, deny_json(get('q', '/ok'))->[1] ];
});

is($again->[0], 200, 'one denial after the quarantine: allowed');
is($again->[1], 0, 'no new quarantine');
is($again->[2], 'quarantined', 'three more: again');
is(scalar @q, 1, 'a second quarantine alert');

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
