#!/usr/bin/perl
# airlockctl edit and rollback killed by a signal (Ctrl-C, a SIGTERM, an
# ssh session's SIGHUP) while they write FILE.new, the checked policy
# that is then renamed into place: FILE.new was left behind, whole or
# cut, and every later edit and rollback refused to start ("an earlier
# edit was interrupted; compare them ...") though FILE had not been
# touched.  The signal now removes it with the lock; FILE is the old
# policy, the edit's copy is kept and the next edit resumes and installs
# it.  strace sends the signal as airlockctl enters the write or the
# fsync of that file (-P); no nginx: --test and --reload are true(1).

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp editor one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

if (system('command -v strace >/dev/null 2>&1') != 0) {
    fail('strace is installed (auto/deps test)') if $ENV{CI};
    plan skip_all => 'no strace to send a signal at a write';
}

plan tests => 4 * 8 + 6;

my $text = one_route_policy();
my $policy = write_file('policy.yaml', $text);
my $to_two = editor('two.sh', "sed -i 's/one/two/g' \"\$1\"\n");
my $keep = editor('keep.sh', "exit 0\n");

# airlockctl CMD under strace, SIG sent at the first SYSCALL on FILE.new:
# (the signal that ended it, through strace and the shell; stderr)
sub killed {
    my ($cmd, $syscall, $sig) = @_;
    local $ENV{VISUAL} = $to_two;
    system('strace -o /dev/null -P ' . quotemeta("$policy.new")
           . " -e trace=$syscall -e inject=$syscall:signal=$sig "
           . join(' ', map { quotemeta } $ctl, $cmd, '--policy', $policy,
                  '--test', 'true', '--reload', 'true')
           . " </dev/null >/dev/null 2>$dir/stderr");
    my $sig = ($? & 127) || (($? >> 8) > 128 ? ($? >> 8) - 128 : 0);
    return ($sig, slurp("$dir/stderr"));
}

sub edit {
    my ($editor) = @_;
    local $ENV{VISUAL} = $editor;
    my $out = `$ctl edit --policy $policy --test true --reload true 2>&1 </dev/null`;
    return ($? >> 8, $out);
}

my %num = (INT => 2, TERM => 15, HUP => 1, QUIT => 3);
my ($st, $err, $rc, $out);

for my $case (['fsync', 'TERM'], ['write', 'INT'], ['fsync', 'HUP'],
              ['write', 'QUIT'])
{
    my ($syscall, $sig) = @$case;
    my $what = "SIG$sig at the $syscall of FILE.new";

    unlink "$policy.edit", "$policy.prev", "$policy.new";
    write_file('policy.yaml', $text);

    ($st, $err) = killed('edit', $syscall, $sig);
    is($st, $num{$sig}, "$what: edit dies of it") or diag($err);
    is(slurp($policy), $text, "$what: FILE is the old policy");
    ok(!-e "$policy.new", "$what: no FILE.new left");
    ok(!-e "$policy.lock", "$what: no FILE.lock left");
    like(slurp("$policy.edit") // '', qr{path: /two},
         "$what: the edited copy is kept");

    ($rc, $out) = edit($keep);
    is($rc, 0, "$what: the next edit is not refused") or diag($out);
    like($out, qr/resuming the refused edit/, "$what: it resumes the copy");
    like(slurp($policy) // '', qr{path: /two},
         "$what: and installs it");
}

# rollback writes FILE.new the same way
(my $two = $text) =~ s/one/two/g;
unlink "$policy.new", "$policy.edit";
write_file('policy.yaml', $two);
write_file('policy.yaml.prev', $text);
($st, $err) = killed('rollback', 'fsync', 'TERM');
is($st, 15, 'rollback killed at the fsync of FILE.new')
    or diag($err);
is(slurp($policy), $two, 'rollback: FILE unchanged');
ok(!-e "$policy.new", 'rollback: no FILE.new left');
ok(!-e "$policy.lock", 'rollback: no FILE.lock left');

my $r = `$ctl rollback --policy $policy --test true --reload true 2>&1`;
is($? >> 8, 0, 'the next rollback is not refused') or diag($r);
is(slurp($policy), $text, 'and rolls back');
