#!/usr/bin/perl

# ngx_http_airlock_llm_module: a call sent whole to the provider that
# nginx ends with 504 (proxy_read_timeout) before the provider's answer
# began is charged its reservation with the prompt at its bound, a token
# a byte of its text, as a call the client hangs up on is, not at the
# estimate's four bytes a token.  The client can bring the timeout about
# (a long answer, not streamed, under a large output cap), and the
# provider bills the call it ran: charged the estimate, a token-dense
# prompt spent up to four times what its budget was charged.  So is an
# attempt that timed out before an error_page sent the call again.  A
# connection the provider closes before answering (502) keeps the
# estimate: the client cannot bring that about.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $dense = 'al-dense-token-FAKE-236236';
my $sha = $l->proxy->token_sha256($dense);

# chat calls an error_page sends again after a 502 or a 504; the other
# locations end the call at its 504
my $locations = <<'L';
        location /v1/proxy/openai/chat/ {
            airlock_llm openai;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 1s;
            proxy_intercept_errors on;
            error_page 502 504 = @again;
        }

        location @again {
            airlock_llm openai;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 1s;
        }
L

$l->setup(
    clients => qq{  dense: { token_sha256: "$sha" }\n},
    location => 'proxy_read_timeout 1s;',
    locations => $locations,
    openai_clients => "      dense:\n        models: [gpt-4o-mini]\n"
        . "        tokens_per_day: 1000000\n"
        . "        default_max_tokens: 100\n",
    anthropic_clients => "      dense:\n        max_tokens: 100\n"
        . "        over_max_tokens: clamp\n"
        . "        tokens_per_day: 1000000\n");
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf') =~ s/proxy_read_timeout 10s;//gr);
$t->run;
plan tests => 10;

my $n = 0;

# 4000 digits: the estimate counts them and the message's "role",
# "user" and "content", 4015 bytes, as 1004 tokens
my $digits = '0123456789' x 400;
my $bound = 4 + 4 + 7 + 4000;
my $estimate = int(($bound + 3) / 4);

# the provider holds every answer until this file exists, far past
# proxy_read_timeout; it is made at the end
my $go = $t->testdir . '/go';

# ---- a 504: the prompt at its bound ----------------------------------------

$l->script({ wait_file => $go });
my $r = $l->messages(token => $dense, prompt => $digits);
is($r->{status}, 504, 'timeout: 504');
my $u = $l->last_usage(++$n);
is_deeply([@$u{qw(status prompt_tokens completion_tokens usage_source)}],
          [504, $bound, 100, 'estimated'],
          'timeout: the output cap, the prompt at its bound, a token a byte '
          . "($bound, not the estimate's $estimate)") or diag(explain $u);
is($u->{total_tokens}, $bound + 100, 'timeout: its total');

# the budget was charged the same: what remains after the next call's
# reservation (the estimate of "Hi" and its keys, 5, and the cap, 100)

$l->script();
$r = $l->messages(token => $dense);
is($r->{headers}{'anthropic-ratelimit-tokens-remaining'},
   1000000 - ($bound + 100) - (5 + 100),
   'timeout: the day budget was charged the bound');
$l->last_usage(++$n);

# ---- a 502 before an answer: the estimate, as before -----------------------

$l->script({ raw => [''] });
$r = $l->messages(token => $dense, prompt => $digits);
is($r->{status}, 502, 'connection closed: 502');
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(status prompt_tokens completion_tokens)}],
          [502, $estimate, 100],
          'connection closed: its reservation, the prompt estimate')
    or diag(explain $u);

# ---- an attempt that timed out, sent again ---------------------------------

# both attempts time out: each charged its reservation, the prompt at its
# bound

$l->script({ wait_file => $go }, { wait_file => $go });
$r = $l->chat(token => $dense, prompt => $digits);
is($r->{status}, 504, 'sent again, both time out: 504');
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(prompt_tokens completion_tokens total_tokens)}],
          [$bound, 100, 2 * ($bound + 100)],
          'sent again, both time out: each attempt at its bound')
    or diag(explain $u);

# the first closed (502), the second timed out: the first keeps its
# estimate

$l->script({ raw => [''] }, { wait_file => $go });
$r = $l->chat(token => $dense, prompt => $digits);
is($r->{status}, 504, 'sent again after a 502: 504');
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(prompt_tokens completion_tokens total_tokens)}],
          [$bound, 100, ($bound + 100) + ($estimate + 100)],
          'sent again after a 502: the 502 at its estimate, the 504 at '
          . 'its bound') or diag(explain $u);

$l->script();
$t->write_file('go', '');
