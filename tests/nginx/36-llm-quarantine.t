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
use Time::HiRes qw(sleep);
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

for (1 .. 3) {
    $r = $l->chat(token => $agent, model => 'gpt-5');
}

is($r->{status}, 403, 'three models refused');

my $n = scalar(my @x = $l->provider_requests);

$r = $l->chat(token => $agent);
is($r->{status}, 403, 'then a good call: 403, quarantined');
is($r->{json}{error}{code}, 'permission_denied', 'quarantine: OpenAI format');
like($r->{json}{error}{message}, qr/quarantine/, 'quarantine: says so');
is(scalar(my @y = $l->provider_requests), $n,
   'quarantine: the provider is not called');

$r = $l->messages(token => $agent);
is($r->{status}, 403, 'quarantine: on every provider');

@j = grep { $_->{type} eq 'alert' && $_->{kind} eq 'quarantine' } journal();
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

sleep 3.2;

$r = $l->chat(token => $agent);
is($r->{status}, 200, 'after the quarantine: 200');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
