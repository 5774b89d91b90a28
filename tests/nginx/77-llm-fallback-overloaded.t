#!/usr/bin/perl

# Ordered fallback and Anthropic's "overloaded" status, 529: the
# documented intercept line leads it to the fallback location, and
# "nginx -t" warns about an anthropic entry's gateway location that
# intercepts the provider's errors but not 529 (its overloaded calls would
# never fall back).  A 529 that cannot fall back reaches the client as an
# Anthropic "overloaded_error", as a 503 does.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: claude
    prefix: /v1/proxy/claude
    max_body_bytes: 65536
    provider: anthropic
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: anthropic_key
    models: [claude-3-5-haiku, claude-opus]
    fallback: claude2
    clients:
      agent: {}
  - name: claude2
    prefix: /v1/proxy/claude2
    max_body_bytes: 65536
    provider: anthropic
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: anthropic_key
    models: [claude-3-5-haiku]
    clients:
      agent: {}
Y

my $locations = Airlock::LLM::fallback_locations(
    names => ['claude'], codes => '429 500 502 503 504 529');

$l->setup(anthropic_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 9;

sub on { $l->on_provider(@_) }

sub call {
    my ($model) = @_;
    return $l->request('POST', '/v1/proxy/claude/v1/messages',
                       token => $l->token('agent'), anthropic => 1,
                       body => { model => $model, max_tokens => 10,
                                 messages => [ { role => 'user',
                                                 content => 'Hi' } ] });
}

# nginx -t: the documented line passes without a word

my $conf = $t->read_file('nginx.conf');
my ($status, $out) = $t->reload_test;
is($status, 0, 'nginx -t: the documented intercept passes');
unlike($out, qr/\[warn\].*claude/, 'nginx -t: no warning with 529 in it');

(my $old = $conf) =~ s/ 504 529 = / 504 = /;
$t->write_file('nginx.conf', $old);
($status, $out) = $t->reload_test;
$t->write_file('nginx.conf', $conf);
is($status, 0, 'nginx -t: without 529 it still passes');
like($out, qr/\[warn\].*llm "claude" has the fallback "claude2", but location "\/v1\/proxy\/claude\/" does not lead status 529 to it/,
     'nginx -t: and warns that its overloaded calls never fall back');

# 529: the fallback answers

on(8081, sub { $l->script({ status => 529 }) });
my $r = call('claude-3-5-haiku');
is($r->{status}, 200, '529: the fallback answers');
my $u = $l->last_usage(1);
ok($u->{provider} eq 'claude2' && $u->{fallback_status} == 529,
   '529: the usage line says so') or diag(explain $u);

# 529 for a model the fallback does not serve: the first status, in
# Anthropic's words for it

on(8081, sub { $l->script({ status => 529 }) });
$r = call('claude-opus');
is($r->{status}, 529, 'no fallback for the model: 529');
is($r->{json}{error}{type}, 'overloaded_error',
   '... an Anthropic overloaded_error') or diag($r->{body});

on(8081, sub { $l->script() });

is($t->error_log_check, '', 'no alerts or sanitizer reports');
