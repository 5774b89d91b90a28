#!/usr/bin/perl

# ngx_http_airlock_module: a buffered journal (airlock_journal FILE
# buffer= flush=) keeps its deny lines in shared memory, a region per
# worker, like the usage log's buffer.  Workers killed with SIGKILL while
# they hold deny lines lose none: the workers nginx starts in their place
# write them, once.  An alert after that (the count of denials is in
# airlock_zone, which a SIGKILL does not touch) is written at once, after
# the deny lines its worker held.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $tok = 'token-a-0123456789';

$p->echo_policy(token => $tok, threshold => 46);

# a long flush time: the deny lines stay in the buffer while the test looks
$t->write_file('nginx.conf',
               $t->expand($p->conf(http => <<'EOF'))
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log buffer=64k flush=1h;
EOF
               =~ s/worker_processes 1;/worker_processes 2;/r);

$t->start_echo(8081);
$t->run;

plan tests => 14;

my $json = JSON::PP->new->utf8;

# the journal's lines, waiting until there are $want of them
sub journal {
    my ($want, $wait) = @_;
    my $deadline = time + $wait;
    my @j;

    for (;;) {
        my $text = $t->read_file('journal.log') // '';
        # not the zone line of nginx's start (210-airlock-zone-new.t)
        @j = grep { $_->{type} ne 'zone' }
             map { $json->decode($_) } grep { length } split /\n/, $text;
        last if @j >= $want || time > $deadline;
        sleep 0.05;
    }
    return @j;
}

sub deny {
    return parse_response(http_get($_[0],
        headers => { 'Proxy-Authorization' => "Bearer $tok" }))->{status};
}

my @w = $t->_workers;
is(scalar @w, 2, 'two workers');

is(scalar(grep { deny("/nope/$_") == 403 } 1 .. 40), 40, '40 denials');
is(scalar journal(1, 1), 0, 'their lines wait in the buffer (flush=1h)');

is(scalar $t->kill_workers, 2, 'nginx started two workers in their place');

my @j = journal(40, 10);
my %seen;
$seen{$_->{path}}++ for @j;
is(scalar @j, 40, 'after SIGKILL: one line per denial');
is(scalar(grep { !$seen{"/nope/$_"} } 1 .. 40), 0,
   'after SIGKILL: every denial\'s line is there');
is(scalar(grep { $_ > 1 } values %seen), 0, 'after SIGKILL: no line twice');
like($t->read_file('error.log') // '',
     qr/writing \d+ bytes of lines to "[^"]*journal\.log" that process/,
     'the error log says who wrote them');

# the new workers took regions again: their lines wait, a stop writes
# them

is(scalar(grep { deny("/nope/$_") == 403 } 41 .. 45), 5, '5 more denials');
is(scalar journal(41, 0.5), 40, 'their lines wait');

# the 46th denial of the minute is an alert, written at once, after the
# deny lines its worker held (the other worker's still wait)
is(deny('/nope/46'), 403, 'the 46th denial');
@j = journal(42, 5);
is($j[-1]{type} // '', 'alert', 'the alert is written at once, last');
is(scalar(grep { $_->{type} eq 'deny' && $_->{path} eq '/nope/46' } @j), 1,
   'after the deny line that raised it');

$t->stop;
@j = journal(47, 5);
is(scalar(grep { $_->{type} eq 'deny' } @j), 46,
   'the stop writes the rest: every denial once');
