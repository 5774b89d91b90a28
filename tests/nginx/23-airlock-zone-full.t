#!/usr/bin/perl

# ngx_http_airlock_module: a zone that fills up.  A tiny airlock_zone and
# many token clients, each quarantined on its first denial: live nodes are
# freed by force to make room, running quarantines never are, and once
# nothing can be freed the worker logs one ALERT and stops counting, while
# every request is still answered.  When the windows and quarantines have
# passed, old nodes expire and new denials are counted again.

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

my $n = 300;
my @who = map { sprintf 'c%03d', $_ } 0 .. $n - 1;
my %tok = map { $_ => "token-$_-0123456789" } @who;

# each client on GET /ok; quarantined at its first denial, for 5s
$p->echo_policy(tokens => \%tok, threshold => 1, window => '5s',
                quarantine => 'threshold: 1, window: 5s, for: 5s');

# 8 pages: the smallest zone nginx accepts
$t->write_file_expand('nginx.conf',
                      $p->conf(http => $p->zone_status_http('32k')));

$t->start_echo(8081);
$t->run;

plan tests => 12;

my $json = JSON::PP->new->utf8;

sub get {
    my ($who, $path) = @_;
    my $h = { 'Proxy-Authorization' => "Bearer $tok{$who}" };
    return http_get($path, headers => $h);
}

sub quarantined {
    my $text = $t->read_file('journal.log') // '';
    return map { $_->{client} }
           grep { $_->{type} eq 'alert' && $_->{kind} eq 'quarantine' }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

sub nomem {
    my $log = $t->read_file('error.log') // '';
    my @l = $log =~ /\[alert\].*could not allocate node in airlock_zone/g;
    return scalar @l;
}

# the quarantine alerts, oldest first
sub quarantines {
    my $text = $t->read_file('journal.log') // '';
    return grep { $_->{type} eq 'alert' && $_->{kind} eq 'quarantine' }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

# The zone filled and its checks, made while the first quarantine runs:
# they stand when every answer was read before the end its alert gives
# (nginx's clock).  A loaded machine may hold the 300 denials up past it
# (then early nodes expire and make room); the zone is then filled
# afresh on a new nginx, three times at most.
my ($t0, $answered, @q, $nomem, $first_q, $s, $first);

for my $try (1 .. 3) {
    if ($try > 1) {
        $t->stop;
        unlink map { $t->testdir . "/$_" } qw(journal.log error.log);
        $t->start_echo(8081);
        $t->run;
    }

    $t0 = time;
    $answered = 0;

    for my $w (@who) {
        $answered++ if deny_json(get($w, '/nope'))->[0] == 403;
    }

    @q = quarantined();
    $nomem = nomem();
    $first_q = deny_json(get($q[0], '/ok'))->[1] if @q;
    $s = json_body(http_get('/status', port => 8082));

    ($first) = quarantines();
    my $until = iso_s($first && $first->{quarantine_until});
    last if defined $until && time < $until;
}

is($answered, $n, 'every denial answered while the zone fills');
cmp_ok(scalar @q, '<', $n, 'not every client could be counted');
cmp_ok(scalar @q, '>', 8, 'but many were');
is($nomem, 1, 'one ALERT for the full zone');

is($first_q, 'quarantined', 'the first quarantine was not freed to make room');

is(scalar @{$s->{quarantined}}, $s->{zone}{nodes},
   'status: the zone holds quarantines only');
diag(sprintf '%d clients quarantined in a zone of %d pages, %.1fs',
             scalar @q, $s->{zone}{pages}, time - $t0)
    if $ENV{TEST_VERBOSE};

# once quarantines and windows are over, old nodes expire

# (past the end the first quarantine's alert gave, on nginx's clock: a
# time taken here before its request may be earlier than its start)
my $until = iso_s($first && $first->{quarantine_until});
my $left = defined $until ? $until + 0.3 - time : 5.3 - (time - $t0);
sleep $left if $left > 0;

is(parse_response(get($q[0], '/ok'))->{status}, 200,
   'after "for": let back');

# and past the last quarantine of the fill, which a loaded machine may
# have started well after the first (its node, once expired, makes room)
my $last_q = (quarantines())[-1];
$until = iso_s($last_q && $last_q->{quarantine_until});
$left = defined $until ? $until + 0.3 - time : 0;
sleep $left if $left > 0;

my $last = $who[-1];
my $before = grep { $_ eq $last } @q;
get($last, '/nope');
is(scalar(grep { $_ eq $last } quarantined()), $before + 1,
   'a new denial is counted again');
is(nomem(), 1, 'still one ALERT');
like($t->read_file('error.log'), qr/\[notice\].*room again in airlock_zone/,
     'room again');

$s = json_body(http_get('/status', port => 8082));
is_deeply([ map { $_->{client} } @{$s->{quarantined}} ], [ $last ],
          'status: only the new quarantine');

is($t->error_log_check(qr/could not allocate node in airlock_zone/), '',
   'no other alerts');


# "2026-12-07T04:07:49.327Z" in seconds
sub iso_s {
    my ($iso) = @_;
    return undef unless ($iso // '') =~
        /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$/;
    require Time::Local;
    return Time::Local::timegm($6, $5, $4, $3, $2 - 1, $1) + ($7 // 0);
}
