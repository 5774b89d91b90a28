#!/usr/bin/perl

# ngx_http_airlock_llm_module: every call lands in its own series, every
# admission in its own budget.  Each worker remembers the series nodes it
# counted lately and the hashes of the budget keys it admitted against
# (small caches in front of the zone's tree, 16 slots each); calls of many
# series (providers, clients, models, statuses) interleaved, with a reload
# in between, must each be counted in exactly their series, tokens
# included, as the usage log has them; 17 limited clients with names of
# one length each keep one budget, which only their own calls spend,
# across a reload.  (Budget keys' slots go by the key's length and the
# client name's last byte: c01 and c11 share one, and each is the first in
# it once, before the reload and after.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $nlimited = 17;
my @limited = map { sprintf('c%02d', $_) } 1 .. $nlimited;
my %ltoken = map { $_ => "al-$_-token-0123456789abcdef" } @limited;

$l->setup(
    clients => join('', map { "  $_: { token_sha256: \""
                              . $l->proxy->token_sha256($ltoken{$_})
                              . "\" }\n" } @limited),
    openai_clients => join('', map { "      $_:\n"
                                     . "        tokens_per_minute: 1000000\n"
                                     . "        max_tokens: 20\n"
                                     . "        over_max_tokens: clamp\n" }
                                   @limited),
);
$t->run;

plan tests => 8;

sub metrics {
    my $raw = http_get('/metrics', port => 8082);
    return parse_response($raw)->{body} // '';
}

# name{labels} value lines of one metric, labels as one string
sub series {
    my ($text, $name) = @_;
    my %v;

    while ($text =~ /^\Q$name\E\{([^}]*)\} (\d+)$/mg) {
        $v{$1} = $2;
    }

    return \%v;
}

# (how to call, client, provider, model)
my @kinds = (
    [ sub { $l->chat(@_) }, 'agent', 'openai', 'gpt-4o-mini' ],
    [ sub { $l->chat(@_, model => 'gpt-4o') }, 'agent', 'openai',
      'gpt-4o' ],
    [ sub { $l->chat(@_) }, 'worker', 'openai', 'gpt-4o-mini' ],
    [ sub { $l->messages(@_) }, 'agent', 'anthropic', 'claude-3-5-haiku' ],
);

# 404 and 500 take the same cache slot (16 slots, picked by the status and
# lengths, which are the same for both)
my @statuses = (200, 200, 500, 404, 429);

my (%calls, %prompt, $sent);
my $ok = 1;

# a fixed order that visits every (kind, status) pair in no simple pattern
sub round {
    my ($seed, $n) = @_;

    for my $i (1 .. $n) {
        $seed = ($seed * 1103515245 + 12345) % 2147483648;
        my $k = $kinds[($seed >> 8) % @kinds];
        my $status = $statuses[($seed >> 16) % @statuses];
        my ($call, $client, $provider, $model) = @$k;

        $l->script($status == 200 ? {} : { status => $status });

        my $r = $call->(token => $l->token($client));
        $sent++;

        if ($r->{status} != $status) {
            $ok = 0;
            diag("$client $provider $model: $r->{status}, not $status");
        }

        my $labels = qq{provider="$provider",client="$client",}
                   . qq{model="$model"};
        $calls{qq{$labels,status="$status"}}++;

        my $u = $l->last_usage($sent);
        $prompt{$labels} += $u->{prompt_tokens} // 0;
    }
}

round(7, 40);
$t->reload;
round(11, 40);

# the last call's log phase may still run after its response was read
$l->last_usage($sent);

my $m = metrics();

ok($ok, 'every call answered with the status the provider was told');
ok(scalar(keys %calls) >= 14, 'many series were called ('
   . scalar(keys %calls) . ')');
is_deeply(series($m, 'airlock_llm_requests_total'), \%calls,
          'airlock_llm_requests_total: every call in its own series');

my $tokens = series($m, 'airlock_llm_tokens_total');
my %got = map { /^(.*),kind="prompt"$/ ? ($1 => $tokens->{$_}) : () }
          keys %$tokens;

is_deeply(\%got, \%prompt,
          'airlock_llm_tokens_total: prompt tokens as the usage log has them');

# ---- budgets ---------------------------------------------------------------

my (%last, $spent_ok, $seed, @order);
$spent_ok = 1;
$seed = 5;

for my $i (1 .. 2 * $nlimited) {
    $seed = ($seed * 1103515245 + 12345) % 2147483648;
    push @order, $limited[($seed >> 8) % $nlimited];
}

@order = (@limited, @order, 'reload', reverse(@limited), @order);

for my $c (@order) {
    if ($c eq 'reload') {
        $t->reload;
        next;
    }

    $l->script();
    my $r = $l->chat(token => $ltoken{$c});
    my $left = $r->{headers}{'x-ratelimit-remaining-tokens'};

    if ($r->{status} != 200 || !defined $left
        || (defined $last{$c} && $left >= $last{$c}))
    {
        $spent_ok = 0;
        diag("$c: $r->{status}, remaining " . ($left // 'none') . " after "
             . ($last{$c} // 'none'));
    }

    $last{$c} = $left;
}

$l->last_usage($sent + @order - 1);

ok($spent_ok, 'each limited client: 200, and its budget goes down with '
   . 'its own calls only');

my $flight = metrics();
my @lines = $flight =~ /^airlock_llm_requests_in_flight\{([^}]*)\} \d+$/mg;
my %seen;
$seen{$_}++ for @lines;

is(scalar(grep { $seen{qq{provider="openai",client="$_"}} } @limited),
   $nlimited, 'a budget for each limited client');
is(scalar(grep { $_ > 1 } values %seen), 0, 'no budget twice');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
