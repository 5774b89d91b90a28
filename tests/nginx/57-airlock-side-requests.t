#!/usr/bin/perl

# The injected credential reaches the route's upstream and no other.
# Subrequests share the request's headers, internal redirects keep them,
# and nginx's proxy module sends a header that was removed (hash 0), so a
# credential left in r->headers_in would go to any other proxy_pass the
# request reaches: an auth_request, a mirror, an add_after_body (whose
# output joins the response after the scrubber), a post_action, a
# try_files fallback, an error_page to a status service (what the docs
# suggest next to the include).  Those locations get no credential; an
# error_page back to an Airlock location forwards to the route's upstream
# with it.  A subrequest cannot enter an Airlock location: an SSI include
# of one, from a page outside Airlock, is refused and reaches no upstream
# (SSI itself is refused in Airlock locations, 58-airlock-content-
# handlers.t).  The LLM gateway's key likewise.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Proxy;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $tok = 'side-request-secret-0123456789';
my $sealed = $p->seal($tok);

sub route {
    my ($name, $up, %o) = @_;
    my $inject = $o{inject} // '';
    return <<"EOF";
  - name: $name
    clients: [local]
    match: { method: GET, path: /$name }
    upstream: $up
    to: /$name
    inject: { Authorization: "Bearer {tok}"$inject }
EOF
}

$t->write_file_expand('policy.yaml', <<"EOF" . join('', map { route(@$_) } (
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
  dead: { url: "http://127.0.0.1:%%PORT_8089%%" }
alerts:
  deny: { threshold: 1000, window: 60s }
routes:
EOF
    [ 'auth', 'echo' ], [ 'mirror', 'echo' ], [ 'down', 'dead' ],
    [ 'add', 'echo' ], [ 'post', 'echo' ], [ 'try', 'echo' ],
    [ 'again', 'echo', inject => ', X-Echo-Status: "502"' ],
    [ 'ssi', 'echo' ],
)));

my $side = 'http://127.0.0.1:%%PORT_8083%%';

# each /NAME is an Airlock location with the standard body and one more
# directive that makes the request reach a location proxying to 8083

sub loc {
    my ($name, $extra) = @_;
    return <<"EOF";
        location = /$name {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_connect_timeout 2s;
            $extra
        }
EOF
}

$t->write_file_expand('nginx.conf', $p->conf(locations =>
    loc('auth', 'auth_request /side/auth;')
    . loc('mirror', 'mirror /side/mirror;')
    . loc('down', 'error_page 502 504 = @status;')
    . loc('add', "add_after_body /side/add;\naddition_types *;")
    . loc('post', 'post_action /side/post;')
    . loc('try', 'try_files /nonexistent @try;')
    . loc('ssi', '')
    . loc('again', "proxy_intercept_errors on;\n"
                   . 'error_page 502 = @again;') . <<"EOF"));
        location \@again {
            airlock on;
            %%AIRLOCK_LOCATION%%
        }

        location /side/ {
            internal;
            proxy_pass $side;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }

        location \@status {
            proxy_pass $side;
        }

        location \@try {
            proxy_pass $side;
        }

        location = /page {
            ssi on;
            ssi_types *;
            return 200 '<!--# include virtual="/ssi" -->';
        }
EOF

$t->start_echo(8081);
$t->start_echo(8083);
$t->run;

plan tests => 23;

sub get {
    my ($uri) = @_;
    return $t->http("GET $uri HTTP/1.1\r\nHost: localhost\r\n"
                    . "Connection: close\r\n\r\n");
}

# the requests an echo upstream got for a target, waiting for them: a
# mirror or a post_action may arrive after the answer
sub got {
    my ($n, $target, $count) = @_;
    my @r;

    for (1 .. 100) {
        @r = grep { $_->{target} eq $target } $t->echo_requests($n);
        last if @r >= ($count // 1);
        sleep 0.05;
    }

    return @r;
}

sub auth_of {
    my ($req) = @_;
    my @a = map { $_->[1] } grep { lc $_->[0] eq 'authorization' }
            @{$req->{headers}};
    return join ', ', @a;
}

sub no_secret {
    my ($n, $target, $name) = @_;
    my @r = got($n, $target);
    ok(@r && !grep({ index(auth_of($_), $tok) >= 0 } @r),
       "$name: $target gets no credential")
        or diag(@r ? 'Authorization: ' . auth_of($r[0]) : 'no request');
}

sub has_secret {
    my ($target, $name, $count) = @_;
    my @r = got(8081, $target, $count);
    ok(@r >= ($count // 1)
       && !grep({ auth_of($_) ne "Bearer $tok" } @r),
       "$name: the route's upstream gets the credential")
        or diag(scalar(@r) . ' requests: '
                . join(' | ', map { auth_of($_) } @r));
}

my $raw;

$raw = get('/auth');
like($raw, qr{^HTTP/1\.1 200}, 'auth_request: allowed');
no_secret(8083, '/side/auth', 'auth_request');
has_secret('/auth', 'auth_request');

$raw = get('/mirror');
like($raw, qr{^HTTP/1\.1 200}, 'mirror: answered');
no_secret(8083, '/side/mirror', 'mirror');
has_secret('/mirror', 'mirror');

$raw = get('/down');
like($raw, qr{^HTTP/1\.1 200}, 'error_page: the status service answers');
no_secret(8083, '/down', 'error_page to a named location');
unlike($raw, qr/\Q$tok\E/, 'error_page: no credential in the answer');

$raw = get('/add');
no_secret(8083, '/side/add', 'add_after_body');
unlike($raw, qr/\Q$tok\E/, 'add_after_body: no credential in the answer')
    or diag($raw);
has_secret('/add', 'add_after_body');

$raw = get('/post');
no_secret(8083, '/side/post', 'post_action');
has_secret('/post', 'post_action');

$raw = get('/try');
like($raw, qr{^HTTP/1\.1 200}, 'try_files: the fallback answers');
no_secret(8083, '/try', 'try_files fallback');

# the subrequest is answered (403) before the echo upstream could be
# reached: by the time the page is, nothing can still arrive there
$raw = get('/page');
like($raw, qr{^HTTP/1\.1 200}, 'SSI page outside Airlock: answered');
ok(!grep({ $_->{target} eq '/ssi' } $t->echo_requests(8081)),
   'SSI include of an Airlock location: refused, no upstream request');
unlike($raw, qr/\Q$tok\E/, 'SSI include: no credential in the answer')
    or diag($raw);

# an error_page to another Airlock location forwards as the route
# decided: to its upstream, with its credential

$raw = get('/again');
like($raw, qr{^HTTP/1\.1 502}, 'error_page to an Airlock location: 502');
has_secret('/again', 'error_page to an Airlock location', 2);

is($t->error_log_check, '', 'no alerts');

# the LLM gateway: the provider key, the same way

my $t2 = Airlock::Test->new;
my $l = Airlock::LLM->new($t2);

$l->setup(location => "mirror /side/mirror;\n"
                      . "proxy_intercept_errors on;\n"
                      . 'error_page 500 = @status;',
          locations => <<"EOF");
        location /side/ {
            internal;
            proxy_pass $side;
        }

        location \@status {
            proxy_pass $side;
        }
EOF

$t2->start_echo(8083);
$t2->run;

my $key = $Airlock::LLM::OPENAI_KEY;

sub llm_side {
    my ($target) = @_;
    my @r;

    for (1 .. 100) {
        @r = grep { $_->{target} eq $target } $t2->echo_requests(8083);
        last if @r;
        sleep 0.05;
    }

    return @r;
}

subtest 'LLM gateway' => sub {
    plan tests => 5;

    my $r = $l->chat(token => $l->token('agent'));
    is($r->{status}, 200, 'a call is served');
    like(join(' ', values %{$l->last_provider_request->{headers}}),
         qr/\Q$key\E/, 'the provider gets its key');

    my @m = llm_side('/side/mirror');
    ok(@m && !grep({ index(auth_of($_), $key) >= 0 } @m),
       'mirror: no provider key') or diag(map { auth_of($_) } @m);

    $l->script({ status => 500 });
    $r = $l->chat(token => $l->token('agent'));
    $l->script();

    my @s = llm_side('/v1/proxy/openai/chat/completions');
    ok(@s && !grep({ index(auth_of($_), $key) >= 0 } @s),
       'error_page after a provider error: no provider key')
        or diag(map { auth_of($_) } @s);
    unlike($r->{raw}, qr/\Q$key\E/, 'no key in the answer');
};
