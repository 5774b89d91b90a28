#!/usr/bin/perl
# The airlock package's purge (debian/airlock.postrm purge, run here in
# a small chroot) removes the sockets' directories tmpfiles.d made,
# /run/airlock/agent and /run/airlock: the tmpfiles.d file went with the
# package, and they were left until the next boot.  The agent's
# directory goes with what is in it (the stopped agent's socket; a link
# there is removed, not followed).  /run/airlock is kept while something
# is left in it, nginx's socket while nginx listens there, and that is
# said.  A removal (no purge) leaves them: a new install uses them.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use IO::Socket::UNIX;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::MiniRoot qw(mini_root);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

absent('chroot needs root') if $> != 0;
need_cmd(qw(chroot ldd sh rm rmdir grep));

my $t = tempdir(CLEANUP => 1);

# a root as a running appliance leaves it after the prerm: the agent's
# socket left in its directory; NGINX: nginx's socket in /run/airlock
sub lay_out {
    my ($name, $nginx) = @_;
    my $r = "$t/$name";

    mini_root($r, qw(sh rm rmdir grep));
    open my $fh, '>', "$r/postrm" or die $!;
    print $fh do { local (@ARGV, $/) = "$top/debian/airlock.postrm"; <> };
    close $fh;
    make_path("$r/run/airlock/agent", "$r/outside");
    chmod 02750, "$r/run/airlock/agent";
    IO::Socket::UNIX->new(Local => "$r/run/airlock/agent/agent.sock",
                          Listen => 1) or die "agent.sock: $!";
    open $fh, '>', "$r/outside/keep" or die $!;
    close $fh;
    symlink('/outside', "$r/run/airlock/agent/link") or die $!;
    if ($nginx) {
        IO::Socket::UNIX->new(Local => "$r/run/airlock/airlock.sock",
                              Listen => 1) or die "airlock.sock: $!";
    }
    return $r;
}

sub postrm {
    my ($r, $arg) = @_;
    my $out = `env -u DPKG_ROOT chroot $r /bin/sh /postrm $arg 2>&1`;
    return ($? >> 8, $out);
}

my $r = lay_out('purge', 0);
my ($rc, $out) = postrm($r, 'purge');
is($rc, 0, 'postrm purge') or diag($out);
ok(!-e "$r/run/airlock/agent", '/run/airlock/agent is removed');
ok(!-e "$r/run/airlock", 'and /run/airlock');
ok(-e "$r/outside/keep", 'what a link in them pointed to is left');
is($out, '', 'without a word');

$r = lay_out('nginx', 1);
($rc, $out) = postrm($r, 'purge');
is($rc, 0, 'postrm purge, nginx\'s socket in /run/airlock') or diag($out);
ok(!-e "$r/run/airlock/agent", '/run/airlock/agent is removed');
ok(-S "$r/run/airlock/airlock.sock",
   'nginx\'s socket is left, and /run/airlock with it');
like($out, qr{keeping /run/airlock}, 'and that is said');

$r = lay_out('remove', 0);
($rc, $out) = postrm($r, 'remove');
is($rc, 0, 'postrm remove') or diag($out);
ok(-S "$r/run/airlock/agent/agent.sock",
   'a removal leaves /run/airlock/agent as it is');

done_testing();
