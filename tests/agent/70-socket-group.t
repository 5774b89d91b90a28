#!/usr/bin/perl

# Who may use the agent at all.  Its socket was 0666: every local user
# and every daemon of the appliance (redis, systemd-resolve, ...) could
# connect and ask, in sessions of its own, with the agent's tools and
# LLM tokens.  With --listen-group GROUP the socket is 0660 and GROUP's
# (airlock-api on the appliance: nginx's www-data is a member, so /api/
# still reaches it): a uid outside the group cannot connect, a member
# (by a supplementary group or its own) can, and root always.  The
# agent made it so itself, or refuses to start: a group it is not in
# is one it cannot give its socket to.  Without the option the socket
# stays 0666.  The unit names the group, and sysusers.d declares it.

use strict;
use warnings;

use Cwd ();
use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Errno ();
use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Unit qw(unit_directives);
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

sub slurp {
    my ($f) = @_;
    local $/;
    open my $fh, '<', $f or die "$f: $!\n";
    return <$fh>;
}

# a group with no name, and uids with no name: as the kernel takes them
my $GROUP = 61070;
my ($OUT, $MEMBER, $PRIMARY, $LONER) = (61001, 61002, 61003, 61004);

$a->setup(agent => [ '--max-wall', 30000 ]);

plan tests => 24;

# the same agent with its socket for the group alone
my $started = eval {
    $a->start_agent('g', '--max-wall', 30000, '--listen-group', $GROUP);
    1;
};
ok($started, "an agent with --listen-group $GROUP starts")
    or diag($@);
our $sock = "$d/agent-g.sock";

# $req on agent g's socket from a process of uid $uid, gid $gid and the
# supplementary groups @groups: (the raw answer, or undef and the
# connect()'s errno)
sub as_uid {
    my ($uid, $gid, $groups, $req) = @_;
    return $a->as_uid($sock, $uid, $req, gid => $gid, groups => $groups);
}

sub get_as {
    my ($uid, $gid, $groups) = @_;
    my ($raw, $errno) = as_uid($uid, $gid, $groups,
                               "GET /v1/sessions/nobody-here HTTP/1.1\r\n"
                               . "Host: a\r\nConnection: close\r\n\r\n");
    my $r = Airlock::Test::parse_response($raw // '');
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    $r->{errno} = $errno;
    return $r;
}

# the socket itself
my @st = stat $sock;
is(sprintf('%04o', ($st[2] // 0) & 07777), '0660', 'its socket is 0660');
is($st[5], $GROUP, "and group ${GROUP}'s");
@st = stat $a->{agents}{a}{sock};
is(sprintf('%04o', ($st[2] // 0) & 07777), '0666',
   'without --listen-group the socket is 0666, as before');

# outside the group: no connection at all
my $r = get_as($OUT, $OUT, []);
is($r->{status}, undef, 'a uid outside the group cannot connect');
is($r->{errno}, Errno::EACCES, 'connect() is refused: EACCES');
$r = get_as($OUT, $OUT, [ $OUT, 61071 ]);
is($r->{status}, undef, 'nor with other supplementary groups');

# the same uid is served by the agent without the option
{
    local $sock = $a->{agents}{a}{sock};
    $r = get_as($OUT, $OUT, []);
    is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
       'which the agent without --listen-group serves');
}

# in the group: served
$r = get_as($MEMBER, $MEMBER, [ $MEMBER, $GROUP ]);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'a member by a supplementary group connects and is answered');
$r = get_as($PRIMARY, $GROUP, []);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'a member by its own group too');
$r = get_as(0, 0, []);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'and root');

# a member's question is asked, as before
$a->script({ pieces => [ 'for a member' ] });
my $body = encode_json({ prompt => 'a question' });
my ($raw) = as_uid($MEMBER, $MEMBER, [ $MEMBER, $GROUP ],
                   "POST /v1/sessions/member/ask HTTP/1.1\r\nHost: a\r\n"
                   . "Content-Length: " . length($body)
                   . "\r\nConnection: close\r\n\r\n$body");
my @ev = AgentTest::events($raw // '');
is(((of_type('answer', \@ev))[0] // {})->{text}, 'for a member',
   'a member\'s question is answered');

# airlock-agent run as $LONER (in no group but its own), listening in
# $dir with --listen-group $GROUP: its exit status, or 'listening' once
# its socket is there (then it is stopped); its stderr
sub loner_agent {
    my ($dir) = @_;
    my $pid = fork // die "fork: $!\n";

    if ($pid == 0) {
        open(STDOUT, '>', "$d/loner.out");
        open(STDERR, '>', "$d/loner.err");
        $( = $LONER;
        $) = "$LONER $LONER";
        $< = $> = $LONER;
        POSIX::_exit(3) if $> != $LONER;
        alarm 20;
        exec($a->{agent}, '--listen', "$dir/agent.sock",
             '--gateway', "$d/airlock.sock", '--redis', "unix:$d/redis.sock",
             '--policy', "$d/policy.yaml", '--listen-group', $GROUP)
            or POSIX::_exit(127);
    }

    my $rc;
    for (1 .. 100) {
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $rc = $? >> 8;
            last;
        }
        if (-S "$dir/agent.sock" && ((stat _)[2] & 07777) != 0600) {
            $rc = 'listening';
            last;
        }
        sleep 0.1;
    }
    $rc //= 'still running';
    my @st = stat "$dir/agent.sock";
    if ($rc !~ /^\d+$/) {
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }

    return ($rc, $t->read_file('loner.err') // '', @st);
}

# an agent that is not in the group cannot give it its socket: it stops
# rather than listen for everyone (or no one)
{
    my $own = "$d/loner";
    mkdir $own;
    chown $LONER, $LONER, $own;
    my ($rc, $err) = loner_agent($own);
    is($rc, 1, 'an agent outside the group does not start (exit 1)')
        or diag($err);
    like($err, qr/--listen-group $GROUP: .*must be a member of the group/,
         'and says why') or diag($err);
    ok(!-e "$own/agent.sock", 'and leaves no socket');
}

# unless its directory is set-group-ID and the group's (the appliance's):
# the socket is the group's as it is made
{
    my $own = "$d/loner-sgid";
    mkdir $own;
    chown $LONER, $GROUP, $own;
    chmod 02750, $own;
    my ($rc, $err, @st) = loner_agent($own);
    is($rc, 'listening', 'in a set-group-ID directory of the group, an '
       . 'agent outside it starts') or diag($err);
    is(sprintf('%04o %s', ($st[2] // 0) & 07777, $st[5] // ''),
       "0660 $GROUP", "its socket 0660, group ${GROUP}'s");
}

# values refused at start
for my $v ('', 'no-such-group-airlock', '61070x') {
    my ($rc, $err) = $a->run_briefly('--listen-group' => $v);
    is($rc, 2, "--listen-group \"$v\" refused at start (exit 2)")
        or diag($err);
}

# the appliance: the unit gives the socket to airlock-api; tmpfiles.d
# makes its directory that group's and set-group-ID (the unit's system
# call filter refuses chown()), and sysusers.d makes the group, with
# nginx's user a member
my $u = unit_directives("$top/conf/airlock-agent.service");
like($u->{ExecStart}[0] // '', qr/\s--listen-group\s+airlock-api(\s|$)/,
     'the unit names --listen-group airlock-api');
my ($listen) = ($u->{ExecStart}[0] // '') =~ /--listen\s+(\S+)/;
(my $ldir = $listen // '') =~ s{/[^/]+$}{};
my ($tf) = grep { (split ' ')[1] eq $ldir }
           grep { /^[dD]\s/ } split /\n/, slurp("$top/conf/airlock.tmpfiles");
my (undef, undef, $mode, $owner, $group) = split ' ', $tf // '';
ok(defined $mode && (oct($mode) & 02000) && !(oct($mode) & 07)
   && $owner eq ($u->{User}[0] // '') && $group eq 'airlock-api',
   "tmpfiles.d: $ldir is the agent's, set-group-ID airlock-api, closed to "
   . 'others (' . ($tf // 'none') . ')');
my $sysusers = slurp("$top/conf/airlock.sysusers");
ok($sysusers =~ /^g\s+airlock-api\s/m
   && $sysusers =~ /^m\s+www-data\s+airlock-api\s*$/m,
   'sysusers.d declares airlock-api, www-data a member');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
