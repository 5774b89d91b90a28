#!/usr/bin/perl

# airlock-agent behind nginx's /api/: every request there reaches the
# agent from one peer, nginx's workers, so by the peer's uid alone every
# client of /api/ would share its sessions (they used to share all of
# them: the agent asked no one who they were).  With --api-peer naming
# nginx's user, each of its requests names the person nginx
# authenticated (auth_basic, X-Airlock-User set from $remote_user over
# whatever the client sent), and the session is that person's: another
# /api/ user gets 404, as for a session that is not there.  A request
# from that peer naming no one is refused (403), as is the header from
# any other peer.  The /api/ location here has the directives of the
# image's (appliance-image/root/etc/nginx/conf.d/airlock.conf); the
# tests' nginx workers run as root, so --api-peer is root.

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

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";

$t->write_file('api.htpasswd', "alice:{PLAIN}FAKE-alice-pw\n"
                               . "bob:{PLAIN}FAKE-bob-pw\n");

$a->setup(agent => [ '--max-wall', 30000, '--api-peer', 'root' ],
          api => <<"EOF");
auth_basic "Airlock API";
            auth_basic_user_file $d/api.htpasswd;
            proxy_set_header X-Airlock-User \$remote_user;
            proxy_set_header Authorization "";
EOF

plan tests => 19;

my $port = $t->port(8080);


# no credentials: nginx asks for them
is($a->api('GET', '/v1/sessions/shared-1')->{status}, 401,
   'no credentials: 401 from nginx');

# alice asks through /api/: the session is hers
$a->script({ pieces => [ 'for alice' ] });
my $r = $a->api('POST', '/v1/sessions/shared-1/ask', 'alice',
            prompt => 'alice asks');
is(answer_of($r), 'for alice', 'alice asks through /api/');
$r = $a->api('GET', '/v1/sessions/shared-1', 'alice');
is($r->{status} . ' ' . ($r->{json}{owner} // ''), '200 api:alice',
   'she reads it: it is hers');

# bob, through the same nginx, does not see it
my $none = $a->api('GET', '/v1/sessions/never-stored', 'bob');
$r = $a->api('GET', '/v1/sessions/shared-1', 'bob');
is($r->{status}, 404, 'bob cannot read alice\'s session');
is($r->{body}, $none->{body},
   'the answer of a session that does not exist');
$a->script({ pieces => [ 'for bob' ] });
$r = $a->api('POST', '/v1/sessions/shared-1/ask', 'bob', prompt => 'bob asks');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'bob cannot ask in it');

# bob naming alice himself: nginx sets the header over his
$r = $a->api('GET', '/v1/sessions/shared-1', 'bob',
         header => "X-Airlock-User: alice\r\n");
is($r->{status}, 404, 'bob\'s own X-Airlock-User: alice is not taken');

# the peer (nginx's uid) on the socket, naming no one: refused
$r = Airlock::Test::parse_response($t->http(
    "GET /v1/sessions/shared-1 HTTP/1.1\r\nHost: a\r\nConnection: close"
    . "\r\n\r\n", unix => $a->{agents}{a}{sock}, timeout => 10) // '');
is($r->{status}, 403, '--api-peer naming no user: 403');
unlike($r->{body} // '', qr/for alice/, 'and nothing of the session');

# an X-Airlock-User that is no name, or two of them: refused whole
$r = Airlock::Test::parse_response($t->http(
    "GET /v1/sessions/shared-1 HTTP/1.1\r\nHost: a\r\nX-Airlock-User: "
    . "alice\r\nX-Airlock-User: bob\r\nConnection: close\r\n\r\n",
    unix => $a->{agents}{a}{sock}, timeout => 10) // '');
is($r->{status}, 400, 'two X-Airlock-User headers: 400');
$r = Airlock::Test::parse_response($t->http(
    "GET /v1/sessions/shared-1 HTTP/1.1\r\nHost: a\r\nX-Airlock-User: "
    . "alice bob\r\nConnection: close\r\n\r\n",
    unix => $a->{agents}{a}{sock}, timeout => 10) // '');
is($r->{status}, 400, 'an X-Airlock-User of two words: 400');

# the airlock CLI with the user and password in --url
my $url = "http://%s:FAKE-%s-pw\@127.0.0.1:$port/api/";
my ($rc, $out) = $a->run_cli('history', '--url', sprintf($url, 'alice', 'alice'),
                         'shared-1');
is($rc, 0, 'airlock history --url as alice: exit 0');
like($out, qr/for alice/, 'her session shown');
($rc, $out) = $a->run_cli('history', '--url', sprintf($url, 'bob', 'bob'),
                      'shared-1');
is($rc, 1, 'as bob: exit 1, the agent\'s 404');
unlike($out // '', qr/for alice/, 'nothing of it shown');

# --api-peer names a user that exists: a typo would leave nginx's clients
# one owner
my ($rc2, $err2) = $a->run_briefly('--api-peer' => 'no-such-user-FAKE');
is($rc2, 2, '--api-peer naming no user: exit 2');
like($err2, qr/^airlock-agent: --api-peer wants .*"no-such-user-FAKE"$/m,
     'one line naming the option');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
