#!/usr/bin/perl
# airlockctl edit and rollback take a lock so that one runs at a time on
# a policy.  It was flock(2) on the policy's directory, which anyone who
# may open the directory (/etc/airlock is 0755: every local user) may
# lock as well: a user holding it kept every edit and rollback refused
# ("another airlockctl edit or rollback is running") for as long as they
# liked.  The lock is now FILE.lock, made 0600 by the run that holds it
# and removed before it lets it go: a user who cannot write the
# directory cannot open it, let alone lock it.  Two runs still exclude
# each other, and a lock file left by a run that was killed stops no one.
# Needs root (to lock as another user); no nginx: --test and --reload
# are true(1).

use strict;
use warnings;
use Fcntl qw(:flock O_RDONLY);
use FindBin;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp editor one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan skip_all => 'needs root' if $> != 0;
my $nobody = getpwnam('nobody');
plan skip_all => 'no user nobody' unless defined $nobody;

plan tests => 9;

chmod 0755, $dir or die;

my $text = one_route_policy();

my $policy = write_file('policy.yaml', $text);
chmod 0644, $policy or die;

my @opts = ('--policy', $policy, '--test', 'true', '--reload', 'true');

# (exit code, stderr)
sub ctl {
    my ($editor, @args) = @_;
    local $ENV{VISUAL} = $editor // 'false';
    my $cmd = join ' ', map { quotemeta } $ctl, @args, @opts;
    `$cmd </dev/null >$dir/stdout 2>$dir/stderr`;
    return ($? >> 8, slurp("$dir/stderr"));
}

sub files {
    opendir my $dh, $dir or die;
    return join ' ', sort grep { /policy\.yaml/ } readdir $dh;
}

# nobody holds a lock on the directory (and on the policy, which all
# may read) until told to let go
pipe my $r, my $w or die;
pipe my $ready_r, my $ready_w or die;
my $pid = fork // die;
if ($pid == 0) {
    close $w;
    close $ready_r;
    POSIX::setgid(65534);
    POSIX::setuid($nobody) or die "setuid: $!";
    sysopen my $dfh, $dir, O_RDONLY or die "open $dir: $!";
    flock($dfh, LOCK_EX | LOCK_NB) or die "flock dir: $!";
    open my $pfh, '<', $policy or die "open: $!";
    flock($pfh, LOCK_EX | LOCK_NB) or die "flock policy: $!";
    my $held = sysopen(my $lfh, "$policy.lock", 0) ? 'lock' : 'no lock';
    syswrite $ready_w, "$held\n";
    <$r>;
    exit 0;
}
close $r;
close $ready_w;
my $held = <$ready_r> // '';
is($held, "no lock\n", 'another user locks the directory and the policy');

my $good = editor('good.sh', "sed -i 's/one/two/g' \"\$1\"\n");
my ($rc, $err) = ctl($good, 'edit');
is($rc, 0, 'an edit is not refused for their lock') or diag($err);
like(slurp($policy), qr{path: /two}, 'and is installed');
is(files(), 'policy.yaml policy.yaml.prev', 'no lock file left');

close $w;
waitpid $pid, 0;

# two runs: the second, started from the first's editor, is refused
my $inner = "$dir/inner";
my $nested = editor('nested.sh',
    join(' ', map { quotemeta } $ctl, 'rollback', @opts)
    . " >/dev/null 2>'$inner.err'; echo \$? >'$inner.rc'\n"
    . "sed -i 's/two/three/g' \"\$1\"\n");
($rc, $err) = ctl($nested, 'edit');
is($rc, 0, 'the first run installs its edit') or diag($err);
is(slurp("$inner.rc"), "2\n", 'the second run is refused');
like(slurp("$inner.err") // '', qr/another airlockctl edit or rollback/,
     'and says why');

# a lock file a killed run left behind stops no one
write_file('policy.yaml.lock', '');
($rc, $err) = ctl(undef, 'rollback');
is($rc, 0, 'a lock file left behind stops no rollback') or diag($err);
is(files(), 'policy.yaml policy.yaml.prev', 'and is removed');
