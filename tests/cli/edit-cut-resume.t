#!/usr/bin/perl
# An editor killed while it writes the copy (or a machine that stops)
# leaves FILE.edit possibly cut short, and a cut YAML can still parse,
# with fewer routes.  The next edit used to resume it as "the refused
# edit" and, the editor quit without a look, install it.  Now
# FILE.edit.open is there while an editor has the copy open and stays
# when it does not exit cleanly; the next edit says the copy may be cut
# short, and installs it only if it is saved in the new editor session
# (its bytes or modification time changed).  A copy a check refused is
# still resumed as the refused edit.  A killed editor is told as killed
# by its signal, not as the shell's "exited with status 137".

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp editor);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 29;

my $text = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
alerts:
  deny: { threshold: 3, window: 60s }
routes:
  - name: one
    clients: [agent]
    match: { method: GET, path: /one }
    upstream: up
    to: /one
  - name: two
    clients: [agent]
    match: { method: GET, path: /two }
    upstream: up
    to: /two
Y
my $pol = write_file('policy.yaml', $text);
chmod 0640, $pol or die;
my $ran = "$dir/ran";

# (exit code, stderr)
sub ctl {
    my ($editor) = @_;
    local $ENV{VISUAL} = $editor;
    my $cmd = join ' ', map { quotemeta } $ctl, 'edit', '--policy', $pol,
                        '--test', "echo test >> $ran",
                        '--reload', "echo reload >> $ran";
    unlink $ran;
    `$cmd </dev/null >$dir/stdout 2>$dir/stderr`;
    return ($? >> 8, slurp("$dir/stderr") // '');
}

sub files {
    opendir my $dh, $dir or die;
    return join ' ', sort grep { /^policy\.yaml/ } readdir $dh;
}

# the cut copy: the route "two" gone, as an editor killed mid-write
# leaves it; it still parses
(my $cut = $text) =~ s/  - name: two.*//s;
write_file('cut.yaml', $cut);
my ($crc) = system("\Q$ctl\E check \Q$dir/cut.yaml\E >/dev/null 2>&1") >> 8;
is($crc, 0, 'the cut copy is a valid policy, fewer routes');

my $killed = editor('killed.sh', "cat \Q$dir/cut.yaml\E > \"\$1\"\n"
                    . "kill -9 \$\$\n");
my ($rc, $err) = ctl($killed);
is($rc, 2, 'an editor killed mid-write: exit 2');
like($err, qr/the editor \(.*\) was killed by signal 9/,
     'told as killed by signal 9') or diag($err);
unlike($err, qr/exited with status 137/, 'not as the shell\'s 137');
like($err, qr/next edit reopens it as an interrupted editor's/, 'and what '
     . 'the next edit does') or diag($err);
is(slurp($pol), $text, 'nothing installed');
ok(!-e $ran, 'neither tested nor reloaded');
is(files(), 'policy.yaml policy.yaml.edit policy.yaml.edit.open',
   'the copy kept, marked as an interrupted editor\'s');

# the operator quits the next editor without a look

my $quit = editor('quit.sh', "exit 0\n");
($rc, $err) = ctl($quit);
is($rc, 1, 'the cut copy not saved in the new editor: exit 1');
like($err, qr/policy\.yaml\.edit is the copy of an editor that did not (?#
              )exit cleanly .*it may be cut short/s,
     'said plainly when resuming') or diag($err);
unlike($err, qr/refused edit/, 'not called the refused edit');
like($err, qr/was not saved in this editor: nothing installed/, 'and why '
     . 'nothing is installed') or diag($err);
is(slurp($pol), $text, 'the policy is unchanged');
ok(!-e $ran, 'neither tested nor reloaded');
is(files(), 'policy.yaml policy.yaml.edit policy.yaml.edit.open',
   'the copy still kept and marked');

# an editor that fails (exits 3): told as such, the copy marked too

my $fails = editor('fails.sh', "exit 3\n");
($rc, $err) = ctl($fails);
is($rc, 2, 'an editor that exits 3: exit 2');
like($err, qr/the editor \(.*\) exited with status 3/, 'told as it is')
    or diag($err);
is(files(), 'policy.yaml policy.yaml.edit policy.yaml.edit.open',
   'the copy still kept and marked');

# saved in the new editor (":w", the same bytes): installed

my $save = editor('save.sh', "touch \"\$1\"\n");
sleep 1;
($rc, $err) = ctl($save);
is($rc, 0, 'the cut copy saved in the new editor: installed') or diag($err);
is(slurp($pol), $cut, 'as saved');
is(slurp($ran), "test\nreload\n", 'tested and reloaded');
is(files(), 'policy.yaml policy.yaml.prev', 'no copy or mark left');

# a copy a check refused: resumed as the refused edit, no mark

my $bad = editor('bad.sh', "printf 'version: [\\n' > \"\$1\"\n");
($rc, $err) = ctl($bad);
is($rc, 1, 'a copy the check refuses: exit 1') or diag($err);
is(files(), 'policy.yaml policy.yaml.edit policy.yaml.prev',
   'kept, not marked');
($rc, $err) = ctl($quit);
like($err, qr/resuming the refused edit in /, 'resumed as the refused edit')
    or diag($err);
unlike($err, qr/did not exit cleanly/, 'not as an interrupted one');
unlink "$pol.edit" or die;

# a power cut while the editor ran: the mark is on disk before it runs;
# a copy that is the policy as it is: no changes, both removed

write_file('policy.yaml.edit', slurp($pol));
chmod 0640, "$pol.edit" or die;
write_file('policy.yaml.edit.open', '');
($rc, $err) = ctl($quit);
is($rc, 0, 'an interrupted copy the same as the policy: exit 0')
    or diag($err);
like($err, qr/no changes/, 'no changes') or diag($err);
is(files(), 'policy.yaml policy.yaml.prev', 'the copy and the mark gone');
