#!/usr/bin/perl

# ngx_http_airlock_llm_module with ngx_http_airlock_module's zone: LLM
# refusals are counted like any other denial, so a client that keeps
# asking for what it may not have is quarantined (and alerted on), on the
# gateway too; budget refusals are logged but not counted.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(
    alerts => "  deny: { threshold: 1000, window: 60s }\n"
              . "  quarantine: { threshold: 3, window: 60s, for: 3s }",
    http => "airlock_zone airlock 1m;\n"
            . "    airlock_journal %%TESTDIR%%/journal.log;",
);

$t->run;

plan tests => 13;

my $agent = $l->token('agent');
my ($r, @j);

sub journal {
    return json_lines($t->read_file('journal.log'));
}

sub quarantines {
    return grep { $_->{type} eq 'alert' && $_->{kind} eq 'quarantine' }
           journal();
}

# the quarantine's checks are made while it runs, by nginx's clock: with
# the answers all read before the end its alert gives, every request was
# decided within the quarantine.  A machine held up past that end gets a
# new quarantine (once the old one is over, the count starts afresh), on
# which the checks are made again.
my ($until, %got);

for my $try (1 .. 3) {
    if (defined $until) {
        my $left = $until + 0.3 - time;
        sleep $left if $left > 0;
    }

    my $alerts = () = quarantines();
    my $refused;

    for (1 .. 3) {
        $refused = $l->chat(token => $agent, model => 'gpt-5');
    }

    my $n = scalar(my @x = $l->provider_requests);
    my $good = $l->chat(token => $agent);
    my $calls = scalar(my @y = $l->provider_requests) - $n;
    my $anthropic = $l->messages(token => $agent);
    my @q = quarantines();
    splice @q, 0, $alerts;

    %got = (refused => $refused, good => $good, calls => $calls,
            anthropic => $anthropic, alerts => \@q);
    $until = iso_s($q[-1] && $q[-1]{quarantine_until});

    last unless defined $until && time >= $until;
}

$r = $got{refused};
is($r->{status}, 403, 'three models refused');

$r = $got{good};
is($r->{status}, 403, 'then a good call: 403, quarantined');
is($r->{json}{error}{code}, 'permission_denied', 'quarantine: OpenAI format');
like($r->{json}{error}{message}, qr/quarantine/, 'quarantine: says so');
is($got{calls}, 0, 'quarantine: the provider is not called');

is($got{anthropic}{status}, 403, 'quarantine: on every provider');

@j = @{$got{alerts}};
is(scalar(@j), 1, 'journal: one quarantine alert');
is($j[0] && $j[0]{client}, 'agent', 'journal: the client');

$r = $l->chat(token => $l->token('worker'));
is($r->{status}, 200, 'another client is not affected');

for (1 .. 8) {
    $r = $l->chat(token => $l->token('tight'), prompt => 'x' x 100);
}

is($r->{status}, 429, 'budget refusals');
ok(!grep({ $_->{type} eq 'alert' && ($_->{client} // '') eq 'tight' }
         journal()), 'budget refusals are not counted');

# past the end the alert gave (nginx's clock), not a time taken here
my $left = ($until // time + 3) + 0.3 - time;
sleep $left if $left > 0;

$r = $l->chat(token => $agent);
is($r->{status}, 200, 'after the quarantine: 200');

is($t->error_log_check, '', 'no alerts or sanitizer reports');


# "2026-12-07T04:07:49.327Z" in seconds
sub iso_s {
    my ($iso) = @_;
    return undef unless ($iso // '') =~
        /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$/;
    require Time::Local;
    return Time::Local::timegm($6, $5, $4, $3, $2 - 1, $1) + ($7 // 0);
}
