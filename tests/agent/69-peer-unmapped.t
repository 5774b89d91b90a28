#!/usr/bin/perl

# airlock-agent tells the peers of its socket apart by uid (SO_PEERCRED),
# which the kernel gives in the agent's own user namespace.  Its unit had
# PrivateUsers=yes: there every uid but root's and the agent's own is the
# one overflow uid (65534), so every local user, nginx's www-data
# included, would be the same peer, and share its sessions.  An agent
# run so refuses such a peer (403) rather than take it for someone; the
# unit runs it without PrivateUsers=, and names nginx's user as its
# --api-peer, and the image's nginx has /api/ ask each client who they
# are and tell the agent (X-Airlock-User) over whatever the client sent.

use strict;
use warnings;

use Cwd ();
use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Unit qw(unit_directives);
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $a = AgentTest->new;
my $t = $a->t;

$a->setup(agent => [ '--max-wall', 30000 ]);

# the same agent in a user namespace of its own (PrivateUsers=)
$a->start_agent_with('u', { userns => 1 }, '--max-wall', 30000);

plan tests => 14;

# the raw answer to $req on agent $name's socket, sent as uid $uid
sub as_uid {
    my ($uid, $name, $req) = @_;
    my $out = $a->as_uid($a->{agents}{$name}{sock}, $uid, $req);

    my $resp = Airlock::Test::parse_response($out);
    $resp->{json} = eval { decode_json($resp->{body} // '') } // {};
    $resp->{events} = [ AgentTest::events($out) ];

    return $resp;
}

sub ask_as {
    my ($uid, $name, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return as_uid($uid, $name, "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                               . "Host: a\r\nContent-Length: "
                               . length($body)
                               . "\r\nConnection: close\r\n\r\n$body");
}


# root, mapped in the agent's namespace, is who it is
$a->script({ pieces => [ 'for root' ] });
is(answer_of(ask_as(0, 'u', 'mapped', 'a question')), 'for root',
   'in a user namespace: root, mapped, is answered');

# two other uids, both the overflow uid there: refused, not one person
$a->script({ pieces => [ 'for 61001' ] });
my $r = ask_as(61001, 'u', 'first', 'a question');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '403 peer',
   'an unmapped uid is refused');
like($r->{json}{message} // '', qr/not mapped/, 'and told why');
$r = as_uid(61002, 'u', "GET /v1/sessions/mapped HTTP/1.1\r\nHost: a\r\n"
                        . "Connection: close\r\n\r\n");
is($r->{status}, 403, 'another unmapped uid: refused too');

# on the host's user namespace (the unit's), the same uid is its own
$a->script({ pieces => [ 'for 61001' ] });
is(answer_of(ask_as(61001, 'a', 'first', 'a question')), 'for 61001',
   'without a user namespace, the uid is answered');

# the unit and the image's nginx
my $d = unit_directives("$top/conf/airlock-agent.service");
my @pu = grep { !/^(no|false|off|0)$/i } @{$d->{PrivateUsers} // []};
ok(!@pu, 'the agent\'s unit has no PrivateUsers=') or diag("@pu");
like($d->{ExecStart}[0] // '', qr/\s--api-peer\s+www-data(\s|$)/,
     'it names nginx\'s user, www-data, as --api-peer');

my $ngx = do {
    local $/;
    open my $fh, '<', "$top/appliance-image/root/etc/nginx/conf.d/"
                      . 'airlock.conf' or die "airlock.conf: $!\n";
    <$fh>;
};
(my $api) = $ngx =~ m#location\s+/api/\s*\{([^}]*)\}#;
$api //= '';
like($api, qr/^\s*auth_basic\s+"[^"]+";/m, '/api/: auth_basic');
unlike($api, qr/^\s*auth_basic\s+off;/m, 'not turned off');
like($api, qr/^\s*auth_basic_user_file\s+\S+;/m, 'a user file');

# past auth_basic, /api/ hands each request on to a named location
# (try_files' last), which proxies it to the agent
my ($to) = $api =~ /^\s*try_files\s+\S+\s+(\@\w+);/m;
my ($proxy) = defined $to ? $ngx =~ m#location\s+\Q$to\E\s*\{([^}]*)\}#
                           : ();
$proxy //= '';
ok(defined $to && $proxy =~ /^\s*proxy_pass\s/m,
   '/api/ hands on to a named location that proxies to the agent')
    or diag('try_files: ' . ($to // 'none'));
like($proxy, qr/^\s*proxy_set_header\s+X-Airlock-User\s+\$remote_user;/m,
     'the user nginx authenticated named to the agent');
like($proxy, qr/^\s*proxy_set_header\s+Authorization\s+"";/m,
     'and not the password');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
