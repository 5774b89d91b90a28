#!/usr/bin/perl

# ngx_http_airlock_llm_module: the request header shortcuts after the
# header rewrite.  nginx keeps pointers to some request headers
# (r->headers_in.host, .referer, .x_forwarded_for, .content_length, ...);
# variables and other modules read the header through them.  After the
# gateway removes the client's headers and adds the provider key, every one
# of them must point at a kept header or at nothing, never at a header the
# provider does not get.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

# nginx's debug log prints the request sent upstream, the key included
local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# every variable nginx 1.22 reads through a headers_in pointer, and a few
# that read the list
my @vars = qw(content_length content_type http_host http_user_agent
              http_referer http_via http_x_forwarded_for http_cookie
              cookie_a remote_user http_authorization http_x_api_key
              http_content_length http_accept);

my $fmt = join ' ', map { "$_=[\$$_]" } @vars;

$l->setup(http => "log_format shortcuts '$fmt';",
          location => 'access_log %%TESTDIR%%/shortcuts.log shortcuts;');
$t->run;

plan tests => 16;

my $agent = $l->token('agent');

# the headers nginx 1.22 has a pointer for, but those that change how
# nginx reads the request, each with a value that names it
my @every = (
    [ 'Referer'             => 'ref-value' ],
    [ 'Via'                 => 'via-value' ],
    [ 'X-Forwarded-For'     => '10.1.2.3' ],
    [ 'Cookie'              => 'a=removed-cookie' ],
    [ 'Proxy-Connection'    => 'pc-value' ],
    [ 'If-Modified-Since'   => 'Thu, 01 Jan 1970 00:00:00 GMT' ],
    [ 'If-Unmodified-Since' => 'Thu, 01 Jan 1970 00:00:01 GMT' ],
    [ 'If-Match'            => '"im-value"' ],
    [ 'If-None-Match'       => '"inm-value"' ],
    [ 'Content-Range'       => 'bytes 0-1/2' ],
    [ 'Range'               => 'bytes=0-1' ],
    [ 'If-Range'            => '"ir-value"' ],
    [ 'TE'                  => 'te-value' ],
    [ 'Upgrade'             => 'up-value' ],
    [ 'Accept-Encoding'     => 'identity' ],
    [ 'Keep-Alive'          => 'timeout=5' ],
    [ 'X-Real-IP'           => '10.3.2.1' ],
    [ 'Accept'              => 'accept/value' ],
    [ 'Accept-Language'     => 'xx-value' ],
    [ 'Depth'               => '1' ],
    [ 'Destination'         => 'http://localhost/dest' ],
    [ 'Overwrite'           => 'F' ],
    [ 'Date'                => 'Thu, 01 Jan 1970 00:00:02 GMT' ],
    [ 'User-Agent'          => 'ua-value' ],
);

my $logged = 0;

# the access log line of the next request, as name => value
sub logged {
    my ($line);

    $logged++;

    for (1 .. 250) {
        my @l = split /\n/, $t->read_file('shortcuts.log') // '';
        $line = $l[$logged - 1];
        last if defined $line;
        select undef, undef, undef, 0.02;
    }

    return ($line // '', { ($line // '') =~ /(\w+)=\[([^\]]*)\]/g });
}

my ($r, $line, $v, $sent);

# a body the gateway rewrites (max_tokens clamped): $content_length is
# what the provider gets, not what the client sent

$r = $l->chat(token => $agent, fields => { max_tokens => 5000 },
              headers => \@every);
is($r->{status}, 200, 'chat: 200');
($line, $v) = logged();
$sent = $l->last_provider_request;
is(Airlock::LLM::leaks($line), 0, 'chat: no provider key in the log line');
is($sent->{headers}{'content-length'}, $v->{content_length},
   'chat: $content_length is the length the provider got');
is($v->{content_type}, 'application/json', 'chat: $content_type kept');
is($v->{http_user_agent}, 'ua-value', 'chat: $http_user_agent kept');
is($v->{http_accept}, 'accept/value', 'chat: $http_accept kept');
is(join(',', map { $v->{$_} } qw(http_host http_referer http_via
                                 http_x_forwarded_for http_cookie cookie_a
                                 remote_user http_authorization
                                 http_x_api_key http_content_length)),
   join(',', ('-') x 10), 'chat: removed ones read as absent');
ok(!exists $sent->{headers}{referer} && !exists $sent->{headers}{cookie},
   'chat: the provider got none of them');

# Anthropic: x-api-key in, the key added at the end of the list

$r = $l->messages(token => $agent, headers => \@every);
is($r->{status}, 200, 'messages: 200');
($line, $v) = logged();
is(Airlock::LLM::leaks($line), 0, 'messages: no provider key in the log');
is($v->{http_user_agent}, 'ua-value', 'messages: $http_user_agent kept');
is(join(',', map { $v->{$_} } qw(http_host http_referer http_via
                                 http_x_forwarded_for http_cookie cookie_a
                                 http_x_api_key)),
   join(',', ('-') x 7), 'messages: removed ones read as absent');

# no body

$r = $l->request('GET', '/v1/proxy/openai/models', token => $agent,
                 headers => [ [ 'Content-Length' => 0 ], @every ]);
is($r->{status}, 200, 'models: 200');
($line, $v) = logged();
is(Airlock::LLM::leaks($line), 0, 'models: no provider key in the log');
is(join(',', map { $v->{$_} } qw(http_host http_referer http_via
                                 http_x_forwarded_for http_cookie
                                 http_authorization)),
   join(',', ('-') x 6), 'models: removed ones read as absent');

is($t->error_log_check, '', 'no alerts');
