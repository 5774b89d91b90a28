#!/usr/bin/perl

# ngx_http_airlock_llm_module: a provider's error answer that nginx
# intercepts (proxy_intercept_errors and an error_page for its status:
# the fallback's, or another location's) is charged the usage its body
# carries, as one passed on to the client is (207): nginx drops that
# body unread, but what came with the header is in the upstream's
# buffer.  With a fallback the call is charged both attempts: the
# error's usage and the fallback's.  Before, the error's usage was lost:
# a router that billed the call and then failed it cost the operator
# that much, and the budget counted the call as the fallback's alone.
# An error without usage adds nothing, as before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: primary
    prefix: /v1/proxy/primary
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    aliases: { fast: gpt-4o-mini }
    fallback: backup
    clients:
      agent: {}
      tight: { tokens_per_day: 100000, max_tokens: 20, over_max_tokens: clamp }
  - name: paged
    prefix: /v1/proxy/paged
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    clients:
      agent: {}
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai-compatible
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: anthropic_key
    models: [llama3.1:8b]
    aliases: { fast: llama3.1:8b, gpt-4o-mini: llama3.1:8b }
    clients:
      agent: {}
      tight: {}
Y

my $locations = Airlock::LLM::fallback_locations(
    names => ['primary'], read_timeout => '10s',
    fallback_read_timeout => '10s');
$locations .= <<'L';
        location /v1/proxy/paged/ {
            airlock_llm paged;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
            proxy_intercept_errors on;
            error_page 500 = @paged_error;
        }

        location @paged_error {
            default_type application/json;
            return 500 '{"error":{"message":"the provider failed"}}';
        }
L

$l->setup(openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 11;

sub on { $l->on_provider(@_) }

sub call {
    my ($name, %o) = @_;
    return $l->request('POST', "/v1/proxy/$name/chat/completions",
                       token => $l->token($o{client} // 'agent'), body => {
                           model => $o{model} // 'fast',
                           messages => [ { role => 'user', content => 'Hi' } ],
                       });
}

sub usage_of {
    my ($r) = @_;
    my ($id) = ($r->{raw} =~ /^x-request-id: (\S+)\r?$/mi);
    for (1 .. 100) {
        my ($u) = grep { $_->{request_id} eq ($id // '') } $l->usage_log;
        return $u if $u;
        select(undef, undef, undef, 0.05);
    }
    return {};
}

# the error, header and body in one write, as a short answer is sent
sub error_answer {
    my ($status, $body, %o) = @_;
    my $head = "HTTP/1.1 $status Error\r\nContent-Type: application/json\r\n";
    if ($o{chunked}) {
        return { raw => [ $head . "Transfer-Encoding: chunked\r\n\r\n"
                          . join('', map { sprintf("%x\r\n%s\r\n",
                                                   length $_, $_) }
                                 @$body)
                          . "0\r\n\r\n" ] };
    }
    return { raw => [ $head . "Content-Length: " . length($body)
                      . "\r\n\r\n" . $body ] };
}

my $usage = '{"error":{"message":"FAKE upstream failure"},'
          . '"usage":{"prompt_tokens":300,"completion_tokens":700,'
          . '"total_tokens":1000}}';

# a 500 with usage, then the fallback: both attempts charged

on(8081, sub { $l->script(error_answer(500, $usage)) });
my $r = call('primary');
on(8081, sub { $l->script() });
is($r->{status}, 200, 'a 500 with usage: the fallback answers');
my $u = usage_of($r);
is($u->{fallback_status}, 500, '... after the 500') or diag(explain $u);
is($u->{total_tokens}, 1014, '... charged the 500\'s usage and the '
   . 'fallback\'s') or diag(explain $u);

# the same body sent in chunks

on(8081, sub { $l->script(error_answer(503, [ substr($usage, 0, 40),
                                              substr($usage, 40) ],
                                       chunked => 1)) });
$r = call('primary');
on(8081, sub { $l->script() });
is(usage_of($r)->{total_tokens}, 1014, 'a chunked 503 with usage: charged '
   . 'it too') or diag(explain usage_of($r));

# an error sent as an event stream: its events' usage

on(8081, sub { $l->script({ raw => [ "HTTP/1.1 502 Error\r\n"
    . "Content-Type: text/event-stream\r\nContent-Length: "
    . (length($usage) + 8) . "\r\n\r\ndata: $usage\n\n" ] }) });
$r = call('primary');
on(8081, sub { $l->script() });
is(usage_of($r)->{total_tokens}, 1014, 'a 502 event stream with usage: '
   . 'charged it too') or diag(explain usage_of($r));

# an error without usage: the fallback's usage alone, as before

on(8081, sub { $l->script(error_answer(429, '{"error":{"message":"slow"}}'))
             });
$r = call('primary');
on(8081, sub { $l->script() });
is(usage_of($r)->{total_tokens}, 14, 'a 429 without usage: the fallback\'s '
   . 'usage alone');

# a body cut short that names a usage in what came: the provider billed
# the call, by how much is not known: its reservation

on(8081, sub { $l->script({ raw => [ "HTTP/1.1 500 Error\r\n"
    . "Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
    . '{"error":{"message":"FAKE"},"usage":{"prompt_tokens":' ] }) });
$r = call('primary');
on(8081, sub { $l->script() });
$u = usage_of($r);
ok(($u->{total_tokens} // 0) > 14, 'a cut body that names a usage: '
   . 'charged the reservation beside the fallback\'s usage')
    or diag(explain $u);

# an error_page to a location of the operator's: charged at the log phase

my $lines = () = $l->usage_log;
on(8081, sub { $l->script(error_answer(500, $usage)) });
$r = call('paged', model => 'gpt-4o-mini');
on(8081, sub { $l->script() });
is($r->{status}, 500, 'an error_page of the operator\'s: its answer');
my @log;
for (1 .. 100) {
    @log = $l->usage_log;
    last if @log > $lines;
    select(undef, undef, undef, 0.05);
}
is(@log > $lines ? $log[-1]{total_tokens} : 'no line', 1000,
   '... the provider\'s usage charged') or diag(explain $log[-1]);

# the budget: tight has 100000 tokens a day; an intercepted error that
# used them leaves none for the next call

on(8081, sub { $l->script(error_answer(500,
    '{"error":{"message":"FAKE"},"usage":{"prompt_tokens":100000,'
    . '"completion_tokens":1,"total_tokens":100001}}')) });
$r = call('primary', client => 'tight');
on(8081, sub { $l->script() });
is($r->{status}, 200, 'tight: the fallback answers the call');
usage_of($r);                           # settled: its line is written

$r = call('primary', client => 'tight');
is($r->{status}, 429, 'tight: the next call is over the day budget');
