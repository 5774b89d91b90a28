#!/usr/bin/perl

# airlock-agent: X-Airlock-Others-Session: yes is root's word that it
# means to ask in another's session, and root is uid 0 on the socket
# alone.  Behind nginx's /api/ (--api-peer root here, as the tests'
# nginx workers run as root) every request is an /api/ user's, never
# root's: the header, which nginx passes on, gets one user nothing in
# another's session (404, as for one not stored), nor does root on the
# socket, which is then the front end and names a user.  In one's own
# session the header changes nothing.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

Airlock::Prereq::absent('the tests\' nginx workers run as root here')
    if $> != 0;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

$t->write_file('api.htpasswd', "alice:{PLAIN}FAKE-alice-pw\n"
                               . "bob:{PLAIN}FAKE-bob-pw\n");

$a->setup(agent => [ '--max-wall', 30000, '--api-peer', 'root' ],
          api => <<"EOF");
auth_basic "Airlock API";
            auth_basic_user_file $d/api.htpasswd;
            proxy_set_header X-Airlock-User \$remote_user;
            proxy_set_header Authorization "";
EOF

plan tests => 11;

my $OTHERS = "X-Airlock-Others-Session: yes\r\n";


# a question on the socket, as its peer (root, the --api-peer)
sub on_socket {
    my ($id, $header) = @_;
    my $body = encode_json({ prompt => 'on the socket' });
    my $raw = $t->http("POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
                       . $header . 'Content-Length: ' . length($body)
                       . "\r\nConnection: close\r\n\r\n$body",
                       unix => $a->{agents}{a}{sock}, timeout => 60) // '';
    my $r = Airlock::Test::parse_response($raw);
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}


sub runs {
    my $s = decode_json($a->redis_cli(qw(GET airlock:session:deploy-review))
                        || '{}');
    return ($s->{owner} // '') . ' ' . scalar(@{$s->{runs} // []});
}

sub calls { scalar(() = $a->provider_requests) }

# alice takes deploy-review through /api/
$a->script({ pieces => [ 'for alice' ] });
my $r = $a->api('POST', '/v1/sessions/deploy-review/ask', 'alice',
            prompt => 'alice asks');
is(answer_of($r), 'for alice', 'alice asks in deploy-review through /api/');
is(runs(), 'api:alice 1', 'it is hers');

# bob sends root's header: nothing for him
my $before = calls();
$r = $a->api('POST', '/v1/sessions/deploy-review/ask', 'bob',
         prompt => 'bob asks', header => $OTHERS);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'bob with X-Airlock-Others-Session: yes is told there is no session');
$r = $a->api('GET', '/v1/sessions/deploy-review', 'bob', header => $OTHERS);
is($r->{status}, 404, 'nor can he read it');

# root on the socket is the front end: it names a user, never itself
$r = on_socket('deploy-review', "X-Airlock-User: bob\r\n$OTHERS");
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'root on the socket naming bob, with the header: 404');
$r = on_socket('deploy-review', $OTHERS);
is($r->{status}, 403, 'root on the socket naming no one, with it: 403');
is(calls(), $before, 'the model was not called');
is(runs(), 'api:alice 1', 'nothing stored in her session');

# in her own session the header changes nothing
$a->script({ pieces => [ 'alice again' ] });
$r = $a->api('POST', '/v1/sessions/deploy-review/ask', 'alice',
         prompt => 'alice again', header => $OTHERS);
is(answer_of($r), 'alice again', 'alice asks in hers with the header too');
is(runs(), 'api:alice 2', 'stored, still hers');

is($t->error_log_check, '', 'no alerts in the error log');
