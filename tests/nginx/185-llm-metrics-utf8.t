#!/usr/bin/perl

# ngx_http_airlock_llm_module: airlock_llm_metrics is always a scrape
# Prometheus takes.  One label value that is not valid UTF-8 makes it
# refuse the whole scrape.  The label values are policy names (provider,
# client, an allowed model) and the status: a model a client sends that
# the policy does not name is refused and never a label, whatever its
# bytes.  But a model longer than a series key keeps (256 bytes) is cut,
# and the cut is made at a character's boundary: a label with half a
# character would show U+FFFD where the policy has none.  (Before, the
# cut fell inside the character and the stray byte was written as
# U+FFFD.)
# promtool (Debian's prometheus package) checks the scrape.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $promtool = (grep { -x } map { "$_/promtool" } split /:/, $ENV{PATH})[0];

if (!defined $promtool) {
    plan skip_all => 'no promtool (apt-get install prometheus)'
        unless $ENV{CI};
    plan tests => 1;
    fail('promtool is installed');
    exit 0;
}

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# 255 bytes, then "é" (c3 a9): a series key keeps 256 bytes of a model
my $long = ('m' x 255) . "\xc3\xa9";
my $utf = "caf\xc3\xa9-\xe2\x80\xae";

$l->setup();
$t->write_file_expand('policy.yaml', $l->policy()
    =~ s/models: \[gpt-4o-mini, gpt-4o, /models: [gpt-4o-mini, gpt-4o, "$long", "$utf", /r);
$t->run;

plan tests => 10;

sub metrics {
    my $raw = http_get('/metrics', port => 8082);
    return parse_response($raw)->{body} // '';
}

sub promtool_check {
    my ($text) = @_;
    my $f = $t->testdir . '/scrape.prom';

    open my $fh, '>:raw', $f or die "$f: $!";
    print $fh $text;
    close $fh;

    my $out = `$promtool check metrics < '$f' 2>&1`;
    return ($? >> 8, $out);
}

# hostile models: refused, so never a label
my @hostile = ("gpt\xff\xfe", "gpt-4o-mini\xc3", "a\"b\nc\\d",
               "\xe2\x80\xae" . 'inim-o4-tpg', 'x' x 300);
my $tok = $l->token('agent');
my $refused = 1;

for my $m (@hostile) {
    my $body = '{"model":"' . ($m =~ s/(["\\])/\\$1/gr =~ s/\n/\\n/gr)
             . '","messages":[{"role":"user","content":"Hi"}]}';
    my $r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                        token => $tok, body => $body);
    $refused = 0 if $r->{status} < 400;
}

for my $p ('/v1/proxy/openai/models/gpt%FF%FE',
           '/v1/proxy/openai/models/a%22b%0Ac')
{
    my $r = $l->request('GET', $p, token => $tok);
    $refused = 0 if $r->{status} < 400;
}

ok($refused, 'hostile models: every call refused');

# the long model, by its id: the series key would cut it inside "é"
my $pct = $long =~ s/([^A-Za-z0-9])/sprintf('%%%02X', ord $1)/ger;
$l->script();
my $r = $l->request('GET', "/v1/proxy/openai/models/$pct", token => $tok);
is($r->{status}, 200, 'the long model: its id answered');

$l->script();
$r = $l->request('POST', '/v1/proxy/openai/chat/completions', token => $tok,
                 body => '{"model":"' . $utf . '","messages":'
                         . '[{"role":"user","content":"Hi"}]}');
is($r->{status}, 200, "a UTF-8 model: a call answered") or diag($r->{body});

# the last call's log phase may still run after its response was read
$l->last_usage(1);

my $m = metrics();
my ($rc, $out) = promtool_check($m);

is($rc, 0, 'promtool check metrics: the scrape is valid') or diag($out);
unlike($out, qr/parsing error|invalid/, 'promtool: no parsing error');

like($m, qr/^airlock_llm_requests_total\{provider="openai",client="agent",model="m{255}",status="200"\} 1$/m,
     'the cut model: cut before the character it would split');
unlike($m, qr/\xef\xbf\xbd/, 'no U+FFFD in the scrape');
like($m, qr/^airlock_llm_requests_total\{provider="openai",client="agent",model="\Q$utf\E",status="200"\} 1$/m,
     'a UTF-8 model as it is');

my $bad = 0;

for my $h (@hostile) {
    $bad++ if index($m, substr($h, 0, 8)) >= 0;
}

is($bad, 0, 'no hostile model in the scrape');
unlike($m, qr/model="(?!m{255}"|\Q$utf\E"|")/,
       'the only model labels: the allowed ones (or none)');
