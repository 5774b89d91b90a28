#!/usr/bin/perl

# ngx_http_airlock_module, ngx_http_airlock_llm_module: the usage log and
# the journal on a disk that fills (a tmpfs of 512k).  A write() the disk
# stops in the middle of a line leaves its part a line of its own, the
# start of the line written whole later: none glued to the next, no
# other cut.  Lines the file would not take
# stay in the buffer and are written once there is room again; old
# workers a reload replaced while the disk was full leave theirs in the
# shared buffer, and a new worker writes them.  Every call has its usage
# line once, every denial its journal line once.  Reloads while the
# disk is full: new workers that find no free region take one of those
# the old ones left, lines and all.  Counts of lines, no
# timing: each wait is for a number of lines.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;
use Airlock::Prereq qw(absent);

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $d = $t->testdir;
my $fs = "$d/fs";

absent('not root: no tmpfs to fill') if $> != 0;
mkdir $fs or die "mkdir $fs: $!";
absent('no tmpfs can be mounted')
    if system("mount -t tmpfs -o size=512k,mode=0755 tmpfs $fs 2>/dev/null");

END { system("umount -l $fs 2>/dev/null") if $fs && $> == 0 }

$l->setup(http => "airlock_journal %%TESTDIR%%/journal.log "
                  . "buffer=4k flush=100ms;");

# both files on the small disk, reached through links in the prefix

for my $name ('usage.log', 'journal.log') {
    unlink "$d/$name";
    symlink "$fs/$name", "$d/$name" or die "symlink: $!";
}

$t->write_file('nginx.conf',
               $t->read_file('nginx.conf')
               =~ s/worker_processes 1;/worker_processes 2;/r);

$t->run;

plan tests => 17;

my $json = JSON::PP->new->utf8;

# the file's lines: the decoded ones, and those that are not JSON but
# the part of a line a full disk cut, which stands alone as the start of
# a line written whole, once it has $want lines or $wait seconds have
# passed
sub lines {
    my ($name, $want, $wait) = @_;
    my $deadline = time + $wait;
    my (@ok, @bad);

    for (;;) {
        my $text = $t->read_file($name) // '';
        my (@raw, @not);
        @ok = ();

        for (split /\n/, $text) {
            next if $_ eq '';
            my $j = eval { $json->decode($_) };
            if (ref $j eq 'HASH') { push @ok, $j; push @raw, $_ }
            else { push @not, $_ }
        }

        @bad = grep { my $p = $_; !grep { index($_, $p) == 0 } @raw } @not;
        push @bad, 'no LF at the end' if length $text && $text !~ /\n\z/;
        last if @ok >= $want || time > $deadline;
        sleep 0.05;
    }
    return (\@ok, \@bad);
}

sub deny {
    return $l->chat(token => $l->token('agent'), model => 'gpt-nope')
               ->{status};
}

sub fill {
    my ($pages) = @_;
    system("dd if=/dev/zero of=$fs/filler bs=4096 count=$pages "
           . "2>/dev/null");
}

# a page or so left: the first lines fit, the next stop mid-line

fill(126);

my (@ids, $denied);

is($l->chats(30, \@ids), 30, '30 calls on a full disk');
$denied = grep { $_ == 403 } map { deny() } 1 .. 10;
is($denied, 10, '10 denials on a full disk');

# the old workers exit holding lines the disk will not take, four
# times: their regions (6, for two workers) stay theirs, and the workers
# of the fourth reload find none free: each takes one of those, with its
# lines

for my $n (1 .. 4) {
    $t->reload;
    is($l->chats(5, \@ids), 5, "5 calls after reload $n, the disk full");
    $denied += grep { $_ == 403 } map { deny() } 1 .. 2;
}

unlink "$fs/filler";

is($l->chats(5, \@ids), 5, '5 calls with room again');

# a worker looks for lines others left when it writes its own, at most
# once a second: denials and calls go on until every line is there (or
# 200 more)

for (1 .. 200) {
    $denied += (deny() == 403);
    $l->chats(1, \@ids);
    my ($n, $m) = (scalar(() = ($t->read_file('journal.log') // '')
                          =~ /^\{"type":"deny"/mg),
                   scalar(() = ($t->read_file('usage.log') // '')
                          =~ /^\{/mg));
    last if $n >= $denied && $m >= @ids;
    sleep 0.05;
}

my ($u, $bad) = lines('usage.log', scalar @ids, 10);
my %seen;
$seen{$_->{request_id} // ''}++ for @$u;

is(scalar @$bad, 0, 'usage log: no line glued, a cut part stands alone')
    or diag explain [ map { substr($_, 0, 120) } @$bad ];
is(scalar @$u, scalar @ids, 'usage log: one line per call');
is(scalar(grep { !$seen{$_} } @ids), 0, 'usage log: every call\'s line');
is(scalar(grep { $_ > 1 } values %seen), 0, 'usage log: no line twice');

my ($j, $jbad) = lines('journal.log', $denied, 10);

is(scalar @$jbad, 0, 'journal: no line glued, a cut part stands alone')
    or diag explain [ map { substr($_, 0, 120) } @$jbad ];
is(scalar(grep { ($_->{type} // '') eq 'deny' } @$j), $denied,
   'journal: one line per denial');

my $el = $t->read_file('error.log') // '';
like($el, qr/No space left on device/, 'the error log says why');
like($el, qr/are left in its shared buffer/,
     'an old worker left its lines for another');

$t->stop;

unlike($el, qr/no free region/, 'every worker had a region');

is($t->error_log_check(qr/No space left|\[alert\].* airlock: /), '',
   'no other alert or sanitizer report');
