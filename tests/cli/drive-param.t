#!/usr/bin/perl
# A path param with "drive: true" (docs/policy.md, params): check names
# each one, explain says when a segment's drive was
# taken by it and which param refused one, a bad value is refused at its
# line and column, and diff reports the option as a grant.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $policy = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
upstreams:
  sheets: { url: "https://sheets.googleapis.com/v4" }
routes:
  - name: sheet-values
    clients: [agent]
    match: { method: GET, path: "/sheets/{id}/values/{range}" }
    params:
      id: '^[A-Za-z0-9_-]+$'
      range: { pattern: '^[A-Za-z0-9!:]+$', drive: DRIVE }
    upstream: sheets
    to: "/spreadsheets/{id}/values/{range}"
alerts:
  deny: { threshold: 3, window: 60s }
Y

(my $text = $policy) =~ s/DRIVE/true/;
my $on = write_file('on.yaml', $text);
($text = $policy) =~ s/DRIVE/false/;
my $off = write_file('off.yaml', $text);

my ($rc, $out);

($rc, $out) = run_ctl('check', $on);
my $note = 'route "sheet-values" (line 7): param {range} takes a drive '
    . '(drive: true)';
ok($rc == 0 && $out =~ /^\Q$on\E: ok \(/m && $out =~ /^\Q$note\E$/m,
   'check names the param that takes a drive')
    or diag($out);

($rc, $out) = run_ctl('check', $off);
ok($rc == 0 && $out !~ /drive/, 'check: drive: false says nothing')
    or diag($out);

($rc, $out) = run_ctl('explain', $on, '--client', 'agent', 'GET',
                  '/sheets/s1/values/A:B');
my $sent = 'https://sheets.googleapis.com/v4/spreadsheets/s1/values/A:B';
$note = '  drive:    {range} "A:B" starts with a drive, taken (drive: true)';
ok($rc == 0 && $out =~ /^  forward:  GET \Q$sent\E$/m
   && $out =~ /^\Q$note\E$/m,
   'explain: the drive taken, and by which param') or diag($out);

($rc, $out) = run_ctl('explain', $on, '--client', 'agent', 'GET',
                  '/sheets/s1/values/A1:B2');
ok($rc == 0 && $out !~ /drive/, 'explain: no drive, no drive line')
    or diag($out);

($rc, $out) = run_ctl('explain', $off, '--client', 'agent', 'GET',
                  '/sheets/s1/values/A:B');
$note = 'deny: path (request target refused: drive letter in param '
    . '"range" of route "sheet-values", which does not take one)';
ok($rc == 1 && $out =~ /^\Q$note\E$/m
   && $out =~ /^route: sheet-values \(line 7\)$/m,
   'explain: without the option, the param that refuses it') or diag($out);

($rc, $out) = run_ctl('explain', $on, '--client', 'agent', 'GET',
                  '/sheets/s1/values/c:%2e%2e');
ok($rc == 1
   && $out =~ /^deny: path \(request target refused: drive letter\)$/m,
   'explain: a drive and a dot segment refused with the option')
    or diag($out);

# a bad value: FILE:LINE:COLUMN and what is expected
for my $c ([ 'yes', 'yes' ], [ '"true"', 'true' ], [ '1', '1' ]) {
    my ($value, $shown) = @$c;
    ($text = $policy) =~ s/DRIVE/$value/;
    my $bad = write_file('bad.yaml', $text);
    ($rc, $out) = run_ctl('check', $bad);
    is($out, "$bad:12:52: param {range}: drive must be true or false, "
       . "found \"$shown\"\n", "check: drive: $value refused at its place");
    is($rc, 1, "check: drive: $value exits 1");
}

($text = $policy) =~ s/drive: DRIVE/drvie: true/;
my $typo = write_file('typo.yaml', $text);
($rc, $out) = run_ctl('check', $typo);
is($out, "$typo:12:45: unknown key \"drvie\" in param {range} (did you "
   . "mean \"drive\"?)\n", 'check: a misspelt drive is named');

# diff: the option granted is '+', taken back '-'
($rc, $out) = run_ctl('diff', $off, $on);
ok($rc == 1
   && $out =~ /^\+ route sheet-values: param range drive false -> true$/m,
   'diff: drive: true is a grant') or diag($out);
($rc, $out) = run_ctl('diff', $on, $off);
ok($rc == 0
   && $out =~ /^- route sheet-values: param range drive true -> false$/m,
   'diff: drive: false takes it back') or diag($out);

done_testing();
