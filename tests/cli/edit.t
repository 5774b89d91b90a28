#!/usr/bin/perl
# airlockctl edit and rollback against a real nginx: a scripted $EDITOR
# changes the installed policy; a good change is served after the reload,
# a policy check refuses or "nginx -t" fails is refused with the running
# policy kept and the edited copy kept for the next edit, rollback puts
# the previous policy back; the file keeps its mode and no temporary file
# is left behind.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);
my $d = $t->testdir;
my $ctl = $p->ctl;

my $policy = <<'EOF';
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ROUTE
    clients: [local]
    match: { method: GET, path: /ROUTE }
    upstream: echo
    to: /ROUTE
alerts:
  deny: { threshold: 1000000, window: 60s }
EOF

(my $v1 = $policy) =~ s/ROUTE/one/g;
my $file = $t->write_file_expand('policy.yaml', $v1);
$v1 = $t->read_file('policy.yaml');
chmod 0640, $file or die;
$t->write_file_expand('nginx.conf', $p->conf(key => 0));
$t->start_echo(8081);
$t->run;

plan tests => 48;

my $nginx = $t->{nginx};
my $conf = "-p $d/ -c nginx.conf -e $d/test-error.log";
my @opts = ('--policy', $file,
            '--test', "$nginx -t -q $conf",
            '--reload', "$nginx $conf -s reload");

# an ASan build of the module needs its runtime in nginx -t and -s reload
my $env = $t->_nginx_env;
$ENV{$_} = $env->{$_} for keys %$env;

sub editor {
    my ($name, $script) = @_;
    my $path = $t->write_file($name, "#!/bin/sh\nset -e\n$script");
    chmod 0755, $path or die;
    return $path;
}

# runs airlockctl with EDITOR and stdin from /dev/null
sub ctl {
    my ($editor, @args) = @_;
    local $ENV{EDITOR} = $editor // 'false';
    local $ENV{VISUAL};
    delete $ENV{VISUAL};
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    my $out = `$cmd </dev/null 2>$d/ctl.err`;
    my $rc = $? >> 8;
    return ($rc, $out, $t->read_file('ctl.err'));
}

# waits (a safety net, not a measure) until GET PATH answers STATUS
sub serves {
    my ($path, $status) = @_;
    my $end = time + 30;
    my $r;
    while (time < $end) {
        $r = parse_response(http_get($path));
        return 1 if ($r->{status} // 0) == $status;
        sleep 0.05;
    }
    diag("GET $path: " . ($r->{status} // 'none'));
    return 0;
}

sub files {
    opendir my $dh, $d or die;
    return join ' ', sort grep { /^policy\.yaml/ } readdir $dh;
}

ok(serves('/one', 200), 'the first policy serves /one');

# usage
my ($rc, $out, $err) = ctl(undef, 'edit', '--help');
ok($rc == 0 && $out =~ /usage: airlockctl edit/, 'edit --help');
($rc, $out) = ctl(undef, 'rollback', '--help');
ok($rc == 0 && $out =~ /usage: airlockctl rollback/, 'rollback --help');
($rc) = ctl(undef, 'edit', @opts, '--frobnicate', 'x');
is($rc, 2, 'an unknown option is a usage error');
($rc, undef, $err) = ctl(undef, 'rollback', @opts);
ok($rc == 2 && $err =~ /no previous policy/,
   'rollback without a previous policy exits 2');
($rc) = ctl(undef, 'edit', '--policy', "$d/none.yaml");
is($rc, 2, 'a policy that does not exist exits 2');

# a good change
my $good = editor('good.sh', "sed -i 's/one/two/g' \"\$1\"\n");
($rc, $out, $err) = ctl($good, 'edit', @opts);
is($rc, 0, 'a good change is installed') or diag($err);
like($out, qr/installed and reloaded/, 'edit says it reloaded');
ok(serves('/two', 200), 'the new route is served after the reload');
ok(serves('/one', 403), 'the old route is gone');
is((stat $file)[2] & 07777, 0640, 'the policy keeps its mode');
is((stat $file)[4], $>, 'the policy keeps its owner');
is(files(), 'policy.yaml policy.yaml.prev', 'no temporary file left');
is($t->read_file('policy.yaml.prev'), $v1, 'the previous policy is kept');

# no change: nothing happens
($rc, undef, $err) = ctl('true', 'edit', @opts);
is($rc, 0, 'an editor that changes nothing exits 0');
like($err, qr/no changes/, 'and says so');
is(files(), 'policy.yaml policy.yaml.prev', 'and leaves no copy');

# a policy check refuses: file:line:column, the old policy keeps serving
my $before = $t->read_file('policy.yaml');
my $bad = editor('bad.sh', "sed -i 's/    upstream: echo/    upstrem: echo/' "
                           . "\"\$1\"\n");
($rc, undef, $err) = ctl($bad, 'edit', @opts);
is($rc, 1, 'a broken policy is refused');
like($err, qr{policy\.yaml\.edit:10:5: .*upstrem}, 'with file:line:column');
is($t->read_file('policy.yaml'), $before, 'the installed policy is unchanged');
like($err, qr/kept in \S+policy\.yaml\.edit/, 'the copy is kept');
is(files(), 'policy.yaml policy.yaml.edit policy.yaml.prev',
   'the copy is the only file added');
ok(serves('/two', 200), 'the old policy keeps serving');

# the next edit resumes the refused copy: the broken edit is still in it
my $fix = editor('fix.sh', "grep -q upstrem \"\$1\"\n"
                           . "sed -i 's/upstrem/upstream/; s/two/three/g' "
                           . "\"\$1\"\n");
($rc, undef, $err) = ctl($fix, 'edit', @opts);
is($rc, 0, 'the next edit resumes the refused copy and installs it')
    or diag($err);
like($err, qr/resuming the refused edit/, 'and says it resumes');
ok(serves('/three', 200), 'the fixed policy is served');
is(files(), 'policy.yaml policy.yaml.prev', 'the copy is gone');

# the first copy is killed half written (RLIMIT_FSIZE: SIGXFSZ at the
# first write past 1 KiB): the next edit must start again from FILE, not
# resume the cut copy as a refused edit
my $whole = $t->read_file('policy.yaml');
$t->write_file('policy.yaml', $whole . ('# ' . ('x' x 76) . "\n") x 40);
my $long = $t->read_file('policy.yaml');
{
    local $ENV{EDITOR} = 'true';
    my $cmd = join ' ', map { quotemeta } $ctl, 'edit', @opts;
    system("sh -c 'ulimit -f 1; exec $cmd' </dev/null >/dev/null 2>&1");
}
my $st = $?;
ok(($st & 127) == 25 || $st >> 8 == 128 + 25,
   'an edit whose copy cannot be written whole is killed (SIGXFSZ)')
    or diag("status $st");
ok(!-e "$d/policy.yaml.edit", 'and leaves no copy to resume');
($rc, undef, $err) = ctl('true', 'edit', @opts);
ok($rc == 0 && $err =~ /no changes/ && $err !~ /resuming/,
   'the next edit starts again from the policy') or diag($err);
is(files(), 'policy.yaml policy.yaml.prev', 'and leaves nothing behind');
$t->write_file('policy.yaml', $whole);

# passes check, fails nginx -t: a file: secret nginx cannot open
$before = $t->read_file('policy.yaml');
my $prev = $t->read_file('policy.yaml.prev');
my $tfail = editor('tfail.sh', <<"EOS");
sed -i 's|^upstreams:|secrets:\\n  tok: { file: "$d/missing" }\\n&|' "\$1"
sed -i 's|^    to: /three|&\\n    inject: { X-Tok: "{tok}" }|' "\$1"
EOS
($rc, undef, $err) = ctl($tfail, 'edit', @opts);
is($rc, 1, 'a policy nginx -t fails is refused') or diag($err);
like($err, qr/configuration test .* exited/, 'the nginx test is named');
like($t->read_file('test-error.log') // '', qr/missing/,
     'nginx -t saw the candidate');
is($t->read_file('policy.yaml'), $before, 'the old policy is put back');
is($t->read_file('policy.yaml.prev'), $prev, 'the previous one is untouched');
ok(serves('/three', 200), 'the old policy keeps serving');
unlink "$d/policy.yaml.edit";

# a reload that fails puts the old file back too
$before = $t->read_file('policy.yaml');
($rc, undef, $err) = ctl(undef, 'rollback', @opts[0 .. 3],
                         '--reload', 'false');
ok($rc == 1 && $t->read_file('policy.yaml') eq $before,
   'a failed reload is refused and the file put back') or diag($err);

# rollback: back to the policy before the last edit
($rc, $out, $err) = ctl(undef, 'rollback', @opts);
is($rc, 0, 'rollback') or diag($err);
ok(serves('/two', 200) && serves('/three', 403), 'the previous policy serves');
is((stat $file)[2] & 07777, 0640, 'rollback keeps the mode');
is(files(), 'policy.yaml policy.yaml.prev', 'and leaves no temporary file');

# on a terminal, a refused edit offers to reopen the same copy: the
# editor breaks the policy, the operator answers, the editor fixes it
my $toggle = editor('toggle.sh', <<'EOS');
if grep -q upstrem "$1"; then
    sed -i 's/upstrem/upstream/; s/two/four/g' "$1"
else
    sed -i 's/    upstream: echo/    upstrem: echo/' "$1"
fi
EOS

# script(1) (bsdutils, essential in Debian) gives airlockctl a terminal
my $script = grep { -x "$_/script" } split /:/, $ENV{PATH};
fail('script(1) is needed for the terminal tests') if !$script && $ENV{CI};

# runs airlockctl on a terminal answering ANSWER
sub tty {
    my ($answer, @args) = @_;
    local $ENV{EDITOR} = $toggle;
    local $ENV{VISUAL};
    delete $ENV{VISUAL};
    $t->write_file('answer', $answer);
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    $cmd = join ' ', map { quotemeta } 'script', '-qec', $cmd, '/dev/null';
    my $out = `$cmd <$d/answer 2>&1`;
    return ($? >> 8, $out);
}

SKIP: {
skip 'no script(1) for the terminal tests', 5 unless $script;

($rc, $out) = tty("y\n", 'edit', @opts);
ok($rc == 0 && $out =~ /upstrem.*edit again\?.*installed and reloaded/s,
   'on a terminal, edit again reopens the refused copy') or diag($out);
ok(serves('/four', 200), 'and the fixed copy is served');

($rc, $out) = tty("n\n", 'edit', @opts);
ok($rc == 1 && $out =~ /edit again\?.*kept in/s,
   'answering no ends the edit') or diag($out);
is(files(), 'policy.yaml policy.yaml.edit policy.yaml.prev',
   'with the copy kept');
ok(serves('/four', 200), 'and the running policy unchanged');
}

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
