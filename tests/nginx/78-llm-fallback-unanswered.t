#!/usr/bin/perl

# Ordered fallback after a first provider that was sent the call and never
# answered (proxy_read_timeout: 504): that provider has the prompt and may
# bill all of the output, as a call nginx ends so is charged without a
# fallback (94-llm-charge-unanswered.t).  The fallback's answer does not
# wipe that out: the call is charged the first attempt's reservation, at
# the first entry's price, besides what the fallback reports.  A first
# provider that answered (503) or could not be reached is not charged.
# Without this a client with a dollar budget had a dear primary generate
# for free, as long as each call outlasted proxy_read_timeout and fell
# back to a cheap entry.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => 'al-spender-token-777888999000');
my %sha = map { $_ => $l->proxy->token_sha256($tok{$_}) } keys %tok;

my $entries = <<'Y';
  - name: primary
    prefix: /v1/proxy/primary
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o]
    aliases: { fast: gpt-4o }
    prices:
      gpt-4o: { input: 10, output: 40 }
    fallback: backup
    clients:
      agent: {}
      spender: { usd_per_day: 0.0006, default_max_tokens: 100 }
  - name: dead
    prefix: /v1/proxy/dead
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8084%%/v1"
    secret: openai_key
    models: [gpt-4o]
    aliases: { fast: gpt-4o }
    prices:
      gpt-4o: { input: 10, output: 40 }
    fallback: backup
    clients:
      agent: {}
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: openai_key
    models: [free-model]
    aliases: { fast: free-model }
    prices:
      free-model: { input: 0, output: 0 }
    clients:
      agent: {}
      spender: { default_max_tokens: 100 }
Y

my $locations = Airlock::LLM::fallback_locations(names => [qw(primary dead)],
                                                 read_timeout => '1s');

$l->setup(clients => qq{  spender: { token_sha256: "$sha{spender}" }\n},
          openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 12;

sub on { $l->on_provider(@_) }

sub call {
    my ($token, $name) = @_;
    my $r = $l->request('POST', "/v1/proxy/" . ($name // 'primary')
                                . '/chat/completions',
                        token => $token, body => {
                            model => 'fast', max_tokens => 10,
                            messages => [ { role => 'user',
                                            content => 'Hi' } ] });
    my ($id) = ($r->{raw} =~ /^x-request-id: (\S+)\r?$/mi);
    my $deadline = time + 5;
    while (time < $deadline) {
        my ($u) = grep { $_->{request_id} eq ($id // '') } $l->usage_log;
        return ($r, $u) if $u;
        select(undef, undef, undef, 0.05);
    }
    return ($r, {});
}

# the primary holds its answer past proxy_read_timeout: 504, fallback

on(8081, sub { $l->script_all({ delay_first_ms => 2500 }) });

my ($r, $u) = call($l->token('agent'));
is($r->{status}, 200, 'a timed-out call served by the fallback');
is($u->{fallback_status}, 504, 'usage line: it fell back after a 504');

# the backup's usage: 11 in, 3 out, free; the primary's reservation:
# its prompt estimate and the 10 asked for, at gpt-4o's prices

ok($u->{total_tokens} >= 14 + 10 + 1,
   'usage line: the primary\'s reservation is in total_tokens')
    or diag(explain $u);
ok(($u->{cost_usd} // 0) >= 10 * 40e-6,
   'usage line: ... and in cost_usd, at the primary\'s price')
    or diag(explain $u);

# a dollar budget of $0.0006: one such call reserves about $0.00042

($r, $u) = call($tok{spender});
is($r->{status}, 200, 'spender: a call that times out and falls back');
ok(($u->{cost_usd} // 0) > 0.0004, 'spender: charged the primary\'s part')
    or diag(explain $u);
($r) = call($tok{spender});
is($r->{status}, 429,
   'spender: the next one no longer fits the day\'s budget');

# a primary that answers 503 itself: only the fallback is charged

on(8081, sub { $l->script_all({ status => 503 }) });
($r, $u) = call($l->token('agent'));
is($r->{status}, 200, 'a 503 answered: served by the fallback');
is($u->{fallback_status}, 503, '... after a 503');
is($u->{total_tokens}, 14, '... charged the fallback\'s usage alone');

# a primary never reached (connection refused): the same

($r, $u) = call($l->token('agent'), 'dead');
ok($r->{status} == 200 && $u->{fallback_status} == 502,
   'connection refused: served by the fallback');
is($u->{total_tokens}, 14, '... charged the fallback\'s usage alone');

on(8081, sub { $l->script_all({}) });
