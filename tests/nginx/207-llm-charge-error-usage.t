#!/usr/bin/perl

# ngx_http_airlock_llm_module: an error answer of the provider whose body
# says what the call used (a router that bills a call and then fails it,
# as OpenRouter may: "usage" beside "error") is charged that usage, in
# the usage log, the metrics and the budget, as a 2xx answer's is.
# Before, every error answer was charged nothing: the operator paid the
# provider for calls the gateway counted as free.  An error without a
# usage stays free: the provider did not say it billed it, and the
# client got no output.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 14;

my $tok = $l->token('tight');
my $n = 0;
my ($r, $u);

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $tok,
                             anthropic => $o{anthropic});
}

sub metric {
    my ($kind) = @_;
    my $m = parse_response(http_get('/metrics', port => 8082))->{body}
            // '';
    return $m =~ /^airlock_llm_tokens_total\{provider="openai",
                  client="tight",model="gpt-4o-mini",
                  kind="\Q$kind\E"\}\ (\d+)$/mx ? $1 : 0;
}

# chat: a 502 that carries its usage

($r, $u) = call({ status => 502, error_usage => 1,
                  usage => { prompt => 300, completion => 700 } });
is($r->{status}, 502, 'chat, 502 with usage: the error passes');
is($u->{prompt_tokens}, 300, 'chat, 502 with usage: its prompt tokens')
    or diag(explain $u);
is($u->{completion_tokens}, 700,
   'chat, 502 with usage: its completion tokens');
is($u->{total_tokens}, 1000, 'chat, 502 with usage: its total');
is($u->{usage_source}, 'response', 'chat, 502 with usage: read, not guessed');

# anthropic: an overloaded error that carries its usage

($r, $u) = call({ status => 529, error_usage => 1,
                  usage => { prompt => 40, completion => 9 } },
                anthropic => 1);
is($r->{status}, 529, 'anthropic, 529 with usage: the error passes');
is($u->{prompt_tokens} . '/' . $u->{completion_tokens}, '40/9',
   'anthropic, 529 with usage: charged it') or diag(explain $u);

# errors without usage: free, as before

($r, $u) = call({ status => 500 });
is($u->{total_tokens}, 0, 'chat, 500 without usage: not charged')
    or diag(explain $u);

($r, $u) = call({ status => 429 }, anthropic => 1);
is($u->{total_tokens}, 0, 'anthropic, 429 without usage: not charged')
    or diag(explain $u);

# the metrics count what the log says

is(metric('prompt'), 300, 'metrics: the error\'s prompt tokens counted');
is(metric('completion'), 700,
   'metrics: the error\'s completion tokens counted');

# the budget: tight has 100000 tokens a day; an error that used them
# all leaves none for the next call

($r, $u) = call({ status => 500, error_usage => 1,
                  usage => { prompt => 100000, completion => 1 } });
is($u->{total_tokens}, 100001, 'an error that used the day\'s budget: '
   . 'charged it') or diag(explain $u);

$r = $l->chat(token => $tok);
is($r->{status}, 429, 'the next call: over the day budget, 429');
like($r->{body}, qr/insufficient_quota/, 'the next call: insufficient_quota');
