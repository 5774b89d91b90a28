#!/usr/bin/perl

# ngx_http_airlock_module: deny counting and the journal.  Denials are
# counted per (client, reason) in airlock_zone; the threshold-th denial
# within the window writes exactly one alert line to airlock_journal, and
# further denials inside the window write none.  Denials spread wider than
# the window do not alert.  Unknown clients are counted under their
# address.  Every journal line is valid JSON with exactly the fields
# airlock-alertd reads.  Two workers share the zone.

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

my %tok = map { $_ => "token-$_-0123456789" } qw(a b c);
my %sha = map { $_ => $p->token_sha256($tok{$_}) } keys %tok;

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  a: { token_sha256: "$sha{a}" }
  b: { token_sha256: "$sha{b}" }
  c: { token_sha256: "$sha{c}" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [a, b, c]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
alerts:
  deny: { threshold: 3, window: 3s }
EOF

my $conf = $p->conf(http => <<'EOF');
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
EOF
$conf =~ s/worker_processes 1;/worker_processes 2;/;
$t->write_file_expand('nginx.conf', $conf);

$t->start_echo(8081);
$t->run;

plan tests => 46;

my $json = JSON::PP->new->utf8;

sub get {
    my ($who, $path, %o) = @_;
    my $h = $who ? { 'Proxy-Authorization' => "Bearer $tok{$who}" } : {};
    return http_get($path, headers => $h, %o);
}

# the deny and alert lines: not the zone line of nginx's start
# (tests/nginx/210-airlock-zone-new.t)
sub journal {
    my $text = $t->read_file('journal.log') // '';
    return grep { $_->{type} ne 'zone' }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

# the alert lines whose fields have the given values
sub alerts {
    my (%m) = @_;
    return grep {
        my $l = $_;
        $l->{type} eq 'alert' && !grep { ($l->{$_} // '') ne $m{$_} } keys %m
    } journal();
}

sub status { parse_response($_[0])->{status} }

# the times (in ms, by nginx's clock: the journal's) of the deny lines
# that &$match takes ($_ the line)
sub deny_times {
    my ($match) = @_;
    return map { iso_ms($_->{time}) }
           grep { $_->{type} eq 'deny' && $match->() } journal();
}

# Denials that must all count at once: &$try makes them (of the count
# of the deny lines &$match takes), and its checks are made on what it
# returns.  A denial counts for 15/16 of the 3 s window at the least, so
# the try stands when its denials came within 2.7 s by nginx's clock; a
# loaded machine may spread them wider, and then the try is made again
# (five times at most) once the count has expired: 3 s after its last
# denial.  Each try starts from an expired count.  Returns &$try's value
# and the denials of the tries that did not stand.
sub within_window {
    my ($match, $try) = @_;
    my ($res, $lost) = (undef, 0);

    for my $n (1 .. 5) {
        my @before = deny_times($match);
        my $left = @before ? ($before[-1] + 3100) / 1000 - time : 0;
        sleep $left if $left > 0;

        $res = $try->();

        my @d = deny_times($match);
        splice @d, 0, scalar @before;
        last if !@d || $d[-1] - $d[0] < 2700;

        if ($n == 5) {
            diag("denials over $d[0] .. $d[-1] ms, five times");
            last;
        }

        $lost += @d;
    }

    return ($res, $lost);
}

# threshold edge: threshold-1 denials, no alert; the threshold-th, one

is(status(get('a', '/ok')), 200, 'a: allowed route');

my $a_no_route = sub { ($_->{client} // '') eq 'a'
                       && $_->{reason} eq 'no_route' };

my ($got, $lost) = within_window($a_no_route, sub {
    my %got;
    my $n = () = alerts(client => 'a');

    get('a', '/nope') for 1 .. 2;
    $got{early} = alerts(client => 'a') - $n;

    $got{crossing} = json_body(get('a', '/nope/3'));
    $got{alerts} = [ alerts(client => 'a') ];
    splice @{$got{alerts}}, 0, $n;

    get('a', '/nope') for 1 .. 3;
    $got{later} = alerts(client => 'a') - $n;

    return \%got;
});

is($got->{early}, 0, 'threshold - 1 denials: no alert');

my $crossing = $got->{crossing};
my @al = @{$got->{alerts}};
is(scalar @al, 1, 'threshold-th denial: one alert');

my $a1 = $al[0];
is_deeply([ sort keys %$a1 ],
          [ qw(client count id kind reason request_id route sample severity
               time type window) ], 'alert line: fields');
is($a1->{kind}, 'deny_threshold', 'alert: kind');
is($a1->{severity}, 'warning', 'alert: severity');
is($a1->{reason}, 'no_route', 'alert: reason');
is($a1->{route}, undef, 'alert: route null');
is($a1->{count}, 3, 'alert: count');
is($a1->{window}, 3, 'alert: window in seconds');
is($a1->{sample}, 'GET /nope/3', 'alert: sample is the crossing request');
is($a1->{request_id}, $crossing->{request_id},
   'alert: request id of the crossing request');
like($a1->{id}, qr/^[0-9a-f]{32}$/, 'alert: id is 32 hex');
isnt($a1->{id}, $a1->{request_id}, 'alert: id is not the request id');
like($a1->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
     'alert: UTC time in ms');

is($got->{later}, 1, 'more denials in the window: no second');

# counted per reason: two "method" denials of a do not alert

http("POST /ok HTTP/1.0\r\nProxy-Authorization: Bearer $tok{a}\r\n"
     . "Content-Length: 0\r\n\r\n") for 1 .. 2;
is(scalar alerts(client => 'a', reason => 'method'), 0,
   'another reason has its own count');

# window edge: three denials spread wider than the window, no alert

# the times of b's denials by nginx's clock (the journal's, in ms)
sub b_denials {
    return map { iso_ms($_->{time}) }
           grep { $_->{type} eq 'deny' && ($_->{client} // '') eq 'b' }
           journal();
}

# a denial of b, then 1.8 s from the time nginx gave it: a worker that a
# loaded machine held up on one of them cannot bring the next closer
sub b_spread {
    my $n = () = b_denials();
    get('b', '/nope');
    my $deadline = time + 60;
    my @d;
    sleep 0.02 while (@d = b_denials()) <= $n && time < $deadline;
    my $left = (($d[-1] // 0) + 1800) / 1000 - time;
    sleep $left if $left > 0;
}

my $t0 = time;
b_spread();
b_spread();
get('b', '/nope');
cmp_ok(time - $t0, '>', 3.4, 'b: three denials over more than the window');
is(scalar alerts(client => 'b'), 0, 'denials wider than the window: none');

# the last three of b's denials within the window by nginx's clock: this
# one comes 1.2 s at most after the third on an unloaded machine, which a
# loaded one may stretch past the window (3 s from the second): then one
# more, as the three have to be within it
sub b_within {
    my @d = b_denials();
    return @d >= 3 && $d[-1] - $d[-3] < 2700;
}

my $more = 0;
get('b', '/nope');
for (1 .. 10) {
    last if b_within() || alerts(client => 'b');
    get('b', '/nope');
    $more++;
}
@al = alerts(client => 'b');
is(scalar @al, 1, 'three within the window: alert');
is($al[0]{count}, 3, 'the expired denial is not counted');

# re-armed once the window has passed: a's denials have expired

(my $again, my $l) = within_window($a_no_route, sub {
    my $n = () = alerts(client => 'a', reason => 'no_route');

    get('a', '/nope') for 1 .. 2;
    my $two = alerts(client => 'a', reason => 'no_route') - $n;
    get('a', '/nope');

    return [ $two, alerts(client => 'a', reason => 'no_route') - $n ];
});
$lost += $l;

is($again->[0], 0, 'a, after the window: two denials, no alert yet');
is($again->[1], 1, 'a, after the window: a new crossing alerts again');

# unknown clients: counted under their address, whatever token they try

(my $unknown, $l) = within_window(
    sub { $_->{reason} eq 'client_unknown' },
    sub {
        my $n = () = alerts(reason => 'client_unknown');

        get(undef, '/nope');
        http_get('/ok',
                 headers => { 'Proxy-Authorization' => 'Bearer wrong-1' });
        my $two = alerts(reason => 'client_unknown') - $n;
        http_get('/x',
                 headers => { 'Proxy-Authorization' => 'Bearer wrong-2' });

        my @new = alerts(reason => 'client_unknown');
        splice @new, 0, $n;
        return [ $two, @new ];
    });
$lost += $l;

is($unknown->[0], 0, 'unknown: two, no alert');

@al = @$unknown[1 .. $#$unknown];
is(scalar @al, 1, 'unknown: the third from one address alerts');
is($al[0]{client}, undef, 'unknown: client null');
is($al[0]{peer}, '127.0.0.1', 'unknown: the peer address');
is_deeply([ sort keys %{$al[0]} ],
          [ qw(client count id kind peer reason request_id route sample
               severity time type window) ], 'unknown: fields');

# the journal: every line valid JSON, one deny line per denial

my @j = journal();
my @deny = grep { $_->{type} eq 'deny' } @j;
my @alert = grep { $_->{type} eq 'alert' } @j;
is(scalar @deny + scalar @alert, scalar @j, 'only deny and alert lines');
is(scalar @deny, 18 + $more + $lost, 'one deny line per denial');

my %dkeys = map { join(',', sort keys %$_) => 1 } @deny;
is_deeply([ keys %dkeys ],
          [ join ',', qw(client detail method path reason request_id route
                         time type) ], 'deny lines: fields');
is(scalar(grep { $_->{time} =~ /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/ }
           @deny), scalar @deny, 'deny lines: UTC time in ms');

my %ids = map { $_->{id} => 1 } @alert;
is(scalar keys %ids, scalar @alert, 'alert ids are unique');

my %pos;
@pos{map { $j[$_]{request_id} . $j[$_]{type} } 0 .. $#j} = 0 .. $#j;
is(scalar(grep { $pos{"$_->{request_id}alert"} > $pos{"$_->{request_id}deny"} }
           @alert), scalar @alert, 'an alert line follows its deny line');

my ($d) = grep { $_->{request_id} eq $crossing->{request_id} } @deny;
is($d->{client}, 'a', 'deny line: client');
is($d->{path}, '/nope/3', 'deny line: path');
is($d->{reason}, 'no_route', 'deny line: reason');

# the deny log keeps its own format

my @dl = $p->deny_log;
is(scalar @dl, 18 + $more + $lost, 'deny log: one line per denial too');
ok(!exists $dl[-1]{type}, 'deny log: no type field');

# long and hostile requests: one bounded line, still valid JSON

http(('M' x 100) . " /" . ('%ff' x 2000) . " HTTP/1.0\r\n"
     . "Proxy-Authorization: Bearer $tok{c}\r\n\r\n");
get('c', "/x\"y\\z\xff");
my $text = $t->read_file('journal.log');
my @lines = split /\n/, $text;
cmp_ok(length $lines[-2], '<=', 4096, 'long request: line within 4 KiB');
my $long = $json->decode($lines[-2]);
like($long->{path}, qr/^\/(?:%ff)+%?f?\x{2026}$/, 'long path: cut and marked');
is($long->{method}, ('M' x 64) . "\x{2026}", 'long method: cut and marked');
is($json->decode($lines[-1])->{path}, "/x\"y\\z\x{ff}", 'hostile path escaped');
is(scalar(grep { !eval { $json->decode($_); 1 } } @lines), 0,
   'every line is JSON');

# reopened on USR1

my $dir = $t->testdir;
rename "$dir/journal.log", "$dir/journal.log.1";
kill 'USR1', $t->nginx_pid;
# the master passes USR1 on to the worker: until it has reopened the
# file, its lines go to the renamed one
my $deadline = time + 60;
my $reopened;
while (!$reopened && time < $deadline) {
    get('c', '/after-usr1');
    $reopened = ($t->read_file('journal.log') // '')
                =~ /"path":"\/after-usr1"/;
    sleep 0.1 unless $reopened;
}
ok($reopened, 'journal reopened on USR1');

is($t->error_log_check, '', 'no alerts');


# "2026-12-07T04:07:49.327Z" in ms
sub iso_ms {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $se, $ms) =
        ($s // '') =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)Z$/
        or return -1;
    require Time::Local;
    return Time::Local::timegm($se, $mi, $h, $d, $mo - 1, $y) * 1000 + $ms;
}
