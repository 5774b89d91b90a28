#!/usr/bin/perl

# ngx_http_airlock_llm_module: configuration.  "nginx -t" refuses an
# unknown provider, a gateway without its zone, bodies that would not
# stay in memory, a zone too small or a bad series= cap; an LLM location
# inside an "airlock on" server is decided by the gateway; a reload with a
# bad configuration keeps the old one serving.

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

$l->setup(location => 'airlock_llm_log off;');

my $good = $t->read_file('nginx.conf');

plan tests => 26;

sub conf_test {
    my ($conf) = @_;
    $t->write_file('nginx.conf', $conf);
    return $t->reload_test;
}

my ($status, $out);

($status, $out) = conf_test($good);
is($status, 0, 'good configuration: nginx -t passes') or diag($out);

($status, $out) = conf_test($good =~ s/airlock_llm openai;/airlock_llm opnai;/r);
isnt($status, 0, 'unknown provider: nginx -t fails');
like($out, qr/unknown llm provider "opnai".* in \S+nginx\.conf:\d+/,
     'unknown provider: says so, with the place');

($status, $out) = conf_test($good =~ s/airlock_llm_zone llm 1m;//r);
isnt($status, 0, 'no zone: nginx -t fails');
like($out, qr/"airlock_llm" needs "airlock_llm_zone"/, 'no zone: says so');

($status, $out) = conf_test($good =~ s/airlock_llm_zone llm 1m;//r
                                =~ s/airlock_llm (openai|anthropic);//gr);
like($out, qr/"airlock_llm_metrics" in location "\/metrics" needs "airlock_llm_zone"/,
     'metrics without a zone: nginx -t fails');

# the metrics name every client's spending: never where clients reach them

($status, $out) = conf_test($good =~ s{(location /v1/proxy/openai/)}
                                      {location = /m { airlock_llm_metrics; }\n$1}r);
isnt($status, 0, 'metrics beside the gateway\'s locations: nginx -t fails');
like($out, qr/"airlock_llm_metrics" in the server at \S+:\d+ listens on "127\.0\.0\.1:\d+" with the Airlock server at \S+:\d+, where clients reach it/,
     'metrics beside the gateway\'s locations: says so');

($status, $out) = conf_test($good =~ s/listen 127\.0\.0\.1:(\d+);\n(\s*)location = \/metrics/listen 127.0.0.1:$1;\n$2server_name admin;\n$2location = \/metrics/r
                                  =~ s/listen 127\.0\.0\.1:(\d+);(\s*server_name admin)/"listen 127.0.0.1:" . $t->port(8080) . ";$2"/er);
isnt($status, 0, 'metrics on the gateway\'s listener, by name: nginx -t fails');
like($out, qr/"airlock_llm_metrics" .* with the Airlock server/,
     'metrics on the gateway\'s listener, by name: says so');

($status, $out) = conf_test($good =~ s/listen 127\.0\.0\.1:(\d+);(\s*location = \/metrics)/listen $1;$2/r);
isnt($status, 0, 'metrics on every address: nginx -t fails');
like($out, qr/"airlock_llm_metrics" in the server at \S+:\d+ listens on "0\.0\.0\.0:\d+", not a loopback address or a unix socket/,
     'metrics on every address: says so');

($status, $out) = conf_test($good =~ s/client_body_buffer_size 64k;/client_body_buffer_size 8k;/r);
isnt($status, 0, 'small client_body_buffer_size: nginx -t fails');
like($out, qr/"client_body_buffer_size" 8192 .* max_body_bytes 65536/,
     'small client_body_buffer_size: says so');

($status, $out) = conf_test($good =~ s/airlock_llm_zone llm 1m;/airlock_llm_zone llm 1k;/r);
isnt($status, 0, 'tiny zone: nginx -t fails');
like($out, qr/zone "llm" is too small/, 'tiny zone: says so');

($status, $out) = conf_test($good =~ s/airlock_llm_zone llm 1m;/airlock_llm_zone llm 1m series=0;/r);
like($out, qr/invalid parameter "series=0"/, 'series=0: invalid');

($status, $out) = conf_test($good =~ s/airlock_llm_zone llm 1m;/airlock_llm_zone llm 1m series=5;/r);
is($status, 0, 'series=5: accepted') or diag($out);

($status, $out) = conf_test($good =~ s/airlock_keyring \S+;//r);
isnt($status, 0, 'no keyring: nginx -t fails');

# ---- under "airlock on" ------------------------------------------------------

my $on = $good =~ s/(server_name localhost;)/$1\n        airlock on;/r;
($status, $out) = conf_test($on);
is($status, 0, '"airlock on" server with LLM locations: passes')
    or diag($out);

$t->run;

my $r = $l->chat(token => $l->token('agent'));
is($r->{status}, 200, 'under "airlock on": the gateway decides');
$r = $l->request('GET', '/elsewhere', token => $l->token('agent'));
is($r->{status}, 403, 'under "airlock on": other paths are still refused');
is($r->{json}{reason}, 'client_unknown',
   'under "airlock on": by ngx_http_airlock_module (its JSON answer)');

# ---- reload ------------------------------------------------------------------

$t->write_file('nginx.conf', $on =~ s/airlock_llm openai;/airlock_llm nope;/r);
my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'reload with an unknown provider fails');

$r = $l->chat(token => $l->token('agent'));
is($r->{status}, 200, 'the old configuration keeps serving');

is($t->error_log_check(qr/unknown llm provider/), '',
   'no alerts or sanitizer reports');
