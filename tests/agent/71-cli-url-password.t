#!/usr/bin/perl

# airlock, the user CLI: a password in --url or $AIRLOCK_URL (how /api/'s
# basic auth is given, http://USER:PASSWORD@127.0.0.1:8080/api/) is never
# in an error message, which terminals, CI logs and tickets keep.  The
# URL check's own error showed the URL it refused whole: a password with
# a '#', '?' or space (which the check refuses) was printed with it.  And
# the error for a request that failed hid the user and password only up
# to the first '/', '?' or '#' after "://": a password with a '/' passes
# the check, libcurl reads the text before it as a host and a port, and
# the message named it all.  Now both show everything before the URL's
# last '@' as "***".  No agent is needed: nothing reaches one.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use POSIX ();
use Test::More;
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $cli = "$build/airlock";
my $dir = tempdir(CLEANUP => 1);

absent("$cli not built") unless -x $cli;

# [name, URL, how it is given, exit status]; port 9 has no listener
my @cases = (
    [ "a '#' in the password", 'http://op:FAKE#s3cr3t@127.0.0.1:9/api/',
      'url', 2 ],
    [ "a '?' in the password", 'http://op:FAKE?s3cr3t@127.0.0.1:9/api/',
      'env', 2 ],
    [ 'a space in the password', 'http://op:FAKE s3cr3t@127.0.0.1:9/api/',
      'url', 2 ],
    [ "a '/' in the password", 'http://op:FAKE/s3cr3t@127.0.0.1:9/api/',
      'url', 2 ],
    [ "a '/' in the password, \$AIRLOCK_URL",
      'http://op:FAKE/s3cr3t@127.0.0.1:9/api/', 'env', 2 ],
    [ "an '\@' in the password", 'http://op:FAKE@s3cr3t@127.0.0.1:9/api/',
      'url', 2 ],
    [ 'a plain one, the agent not there',
      'http://op:FAKEs3cr3t@127.0.0.1:9/api/', 'url', 2 ],
);

plan tests => 3 * @cases + 1;

sub run_cli {
    my ($env, @args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        delete $ENV{AIRLOCK_AGENT_SOCKET};
        delete $ENV{AIRLOCK_URL};
        $ENV{AIRLOCK_URL} = $env if defined $env;
        open(STDOUT, '>', "$dir/out");
        open(STDERR, '>', "$dir/err");
        exec($cli, @args) or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    my $rc = $? >> 8;
    open my $fh, '<', "$dir/err" or die;
    my $err = do { local $/; <$fh> } // '';
    return ($rc, $err);
}

for my $c (@cases) {
    my ($name, $url, $how, $status) = @$c;
    my ($rc, $err) = $how eq 'env'
        ? run_cli($url, 'history', 'abc')
        : run_cli(undef, 'history', 'abc', '--url', $url);

    is($rc, $status, "$name: exit $status") or diag($err);
    unlike($err, qr/s3cr3t|FAKE|op:/, "$name: no password in the message")
        or diag($err);
    like($err, qr/\Q***\E\@127\.0\.0\.1:9\/api/,
         "$name: the URL shown, its user and password as ***")
        or diag($err);
}

# the path keeps its '@' out of sight too, and shows no more than that
my ($rc, $err) = run_cli(undef, 'history', 'abc', '--url',
                         'http://127.0.0.1:9/api/#x@y');
like($err, qr/not "http:\/\/\Q***\E\@y"/, "a URL's last '\@' counts")
    or diag($err);
