#!/usr/bin/perl
# The state and the outbox cut on disk.  alertd replaces its files
# atomically (.tmp-NAME, fsync, rename, fsync of the directory), but a
# file system that does not keep that order, a disk that lies about its
# cache or a copy made while alertd ran may leave a file cut at any
# byte, empty, or a scratch file beside it.  For a state directory with
# a snapshot, a change log of several saves and an outbox of several
# alerts, each of offset, offset.log and an outbox file is cut at every
# byte of a dense sample (every one of the first and last 24 bytes and
# around each line's end, and a stride of at most 1/48 of the file
# between; AIRLOCK_CUT_ALL=1 takes every byte), and each scratch file is
# left behind, and alertd --once run on the copy: it must start and
# exit 0, keep every whole record, set the cut one aside with a line
# that says so, and deliver every alert owed at least once
# (docs/alerts.md: a duplicate carries its id).  Where
# the cut record is an outbox file, its alert is set aside as NAME.bad
# and said, and the others are delivered.
#
# A snapshot cut short used to stop alertd at start ("damaged"), exit 2,
# until an operator came: a power cut stopped every alert.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use File::Path qw(remove_tree);
use JSON::PP;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'cut-files-test-FAKE-0123456789abcdef');
my $gate = $t->dir . '/up';
my $r = $t->receiver(secret => $secret, fail_until => $gate);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @hour = ('--repeat-interval', '1h', '--poll-interval', '1h');


# a state directory: the sink down, four alerts queued one by one (each
# a save appended to offset.log), two repeats folded into a group, and
# alertd killed: offset.log is not folded into offset

$t->alertd(@hour);
my @ids;
for my $n (1 .. 4) {
    push @ids, $t->alert(client => "agent-$n");
    my $id = $ids[-1];
    ok($t->wait_for(sub { $t->alertd_log =~ /queued alert \Q$id\E:/ }),
       "alert $n queued") or diag($t->alertd_log);
}
$t->alert(client => 'agent-1');
my $last = $t->alert(client => 'agent-2');
ok($t->wait_for(sub {
       $t->read_file($t->state . '/offset.log') =~ /\Q$last\E/ }),
   'the repeats saved in offset.log');
$t->stop($t->alertd_pid, 'KILL');

my $state = $t->state;
my $keep = $t->dir . '/state.orig';
system('cp', '-a', $state, $keep) == 0 or die 'cp';

my @lines = split /(?<=\n)/, $t->read_file("$keep/offset.log");
cmp_ok(scalar(@lines), '>=', 2, 'offset.log holds several saves')
    or diag(scalar @lines);
my ($entry) = grep { /\Q$ids[1]\E/ } $t->outbox;
ok($entry, 'the outbox holds the alerts') or diag(join ' ', $t->outbox);

my @base = ('--policy', $t->dir . '/policy.yaml', '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', $state, @hour, '--once');

# the sink is up from now on: what is queued can be delivered
$t->write_file($gate, '');

my $seen = 0;
my @fail;
my $json = JSON::PP->new;


# the offsets to cut a file of size bytes at, ends: where lines end

sub cuts {
    my ($size, @ends) = @_;
    my %k;
    my $stride = int($size / 48) || 1;

    return (0 .. $size) if $ENV{AIRLOCK_CUT_ALL};

    for my $e (0, $size, @ends) {
        $k{$_} = 1 for grep { $_ >= 0 && $_ <= $size } $e - 24 .. $e + 24;
    }
    for (my $i = 0; $i <= $size; $i += $stride) {
        $k{$i} = 1;
    }

    return sort { $a <=> $b } keys %k;
}


# the receiver's records since the last call
sub new_records {
    my @rec;
    open(my $fh, '<:raw', $r->{log}) or die "$r->{log}: $!";
    seek($fh, $seen, 0);
    while (my $line = <$fh>) {
        last unless $line =~ /\n$/;
        $seen += length $line;
        push @rec, $json->decode($line);
    }
    close $fh;
    return @rec;
}


# one run on a fresh copy, the file cut: (exit status, log, ids sent)

sub run_cut {
    my ($name, $len, $extra) = @_;

    remove_tree($state);
    system('cp', '-a', $keep, $state) == 0 or die 'cp';

    if (defined $len) {
        my $path = "$state/$name";
        truncate($path, $len) or die "truncate $path: $!";
    }
    $extra->() if $extra;

    my ($rc, $err) = $t->run_alertd(@base);
    my %sent = map { $_->{id} => 1 }
               grep { $_->{status} =~ /^2/ } new_records();

    return ($rc, $err, \%sent);
}


sub check {
    my ($what, $rc, $err, $sent, @owed) = @_;
    my @missing = grep { !$sent->{$_} } @owed;
    my @other = grep { my $s = $_; !grep { $_ eq $s } @ids } keys %$sent;

    return 1 if $rc == 0 && !@missing && !@other
                && $err !~ /AddressSanitizer|runtime error:/;

    push @fail, "$what: exit $rc, not sent: @missing, sent too: @other\n"
                . join("\n", grep { /warning|error/ } split /\n/, $err);
    return 0;
}


# offset, the snapshot: cut at every byte

my $size = -s "$keep/offset";
my @at = cuts($size);
my $ok = 0;
my $said = 0;
for my $len (@at) {
    my ($rc, $err, $sent) = run_cut('offset', $len);
    $ok += check("offset cut at $len of $size", $rc, $err, $sent, @ids);
    $said++ if $len == $size
               || ($err =~ /\Q$state\E\/offset is cut short/
                   && -e "$state/offset.bad");
}
is($ok, scalar(@at), 'offset (' . @at . " cuts of its $size bytes, and "
   . 'whole): alertd starts, every queued alert is delivered')
    or diag(join "\n", @fail[0 .. ($#fail < 4 ? $#fail : 4)]);
is($said, scalar(@at), 'each cut said, the file set aside')
    or diag(join "\n", @fail[0 .. ($#fail < 4 ? $#fail : 4)]);
@fail = ();


# offset.log, the saves after it: cut at every byte

$size = -s "$keep/offset.log";
$ok = 0;
$said = 0;
my @ends = (0);
push @ends, $ends[-1] + length($_) for @lines;
@at = cuts($size, @ends);
for my $len (@at) {
    my ($rc, $err, $sent) = run_cut('offset.log', $len);
    $ok += check("offset.log cut at $len of $size", $rc, $err, $sent,
                 @ids);
    # a cut at a line's end leaves whole lines: nothing to say
    $said++ if (grep { $_ == $len } @ends)
               || $err =~ /offset\.log.*(?:cut short|not a save|ends)/i;
}
is($ok, scalar(@at), 'offset.log (' . @at . " cuts of its $size bytes): "
   . 'alertd starts, every queued alert is delivered')
    or diag(join "\n", @fail[0 .. ($#fail < 4 ? $#fail : 4)]);
is($said, scalar(@at), 'each cut line said')
    or diag(join "\n", @fail[0 .. ($#fail < 4 ? $#fail : 4)]);
@fail = ();


# an outbox file: cut at every byte.  Its alert is set aside (NAME.bad,
# said), the others delivered; whole, it is delivered too.

$size = -s "$keep/outbox/$entry";
$ok = 0;
$said = 0;
my @others = grep { $_ ne $ids[1] } @ids;
@at = cuts($size);
for my $len (@at) {
    my ($rc, $err, $sent) = run_cut("outbox/$entry", $len);
    $ok += check("outbox/$entry cut at $len of $size", $rc, $err, $sent,
                 $len == $size ? @ids : @others);
    $said++ if $len == $size
               || (-e "$state/outbox/$entry.bad"
                   && $err =~ /\Q$entry\E.*\.bad/);
}
is($ok, scalar(@at), 'an outbox file (' . @at . " cuts of its $size "
   . 'bytes): alertd starts, every other alert is delivered')
    or diag(join "\n", @fail[0 .. ($#fail < 4 ? $#fail : 4)]);
is($said, scalar(@at), 'each cut file set aside as NAME.bad and said')
    or diag(join "\n", @fail[0 .. ($#fail < 4 ? $#fail : 4)]);
@fail = ();


# scratch files left behind by a crash between write and rename, cut at
# a few places: removed, never read as state or sent

my $snap = $t->read_file("$keep/offset");
my $body = $t->read_file("$keep/outbox/$entry");
for my $len (0, 1, int(length($snap) / 2), length($snap)) {
    my ($rc, $err, $sent) = run_cut(undef, undef, sub {
        $t->write_file("$state/.tmp-offset", substr($snap, 0, $len));
        $t->write_file("$state/outbox/.tmp-$entry",
                       substr($body, 0, $len < length($body) ? $len
                                                             : length($body)));
    });
    ok(check("scratch files of $len bytes", $rc, $err, $sent, @ids),
       "scratch files of $len bytes: alertd starts, every alert delivered")
        or diag(join "\n", @fail);
    ok(!-e "$state/outbox/.tmp-$entry" && !-e "$state/.tmp-offset",
       'and they are gone');
    @fail = ();
}


# a zero-length outbox, state and log at once

my ($rc, $err, $sent) = run_cut(undef, undef, sub {
    truncate("$state/$_", 0) for 'offset', 'offset.log', "outbox/$entry";
});
ok(check('all empty', $rc, $err, $sent, @others),
   'offset, offset.log and an outbox file all empty: alertd starts, the '
   . 'other alerts delivered') or diag(join "\n", @fail);

$t->done;
