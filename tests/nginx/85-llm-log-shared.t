#!/usr/bin/perl

# ngx_http_airlock_llm_module: the usage log's buffer is in shared memory
# (airlock_llm_log FILE buffer=SIZE flush=TIME).  Lines wait for the flush
# time, then are written; a worker that is killed (SIGKILL) loses none of
# the lines it held: the worker nginx starts in its place writes them,
# once.  A reload and a stop write what the old workers held.  Two
# workers each take a region of their own.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# a long flush time: the lines stay in the buffer while the test looks
$l->setup(log => ' buffer=64k flush=1h');
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf')
               =~ s/worker_processes 1;/worker_processes 2;/r);

$t->run;

plan tests => 34;

my @ids;

# the calls' request ids, and their usage lines (an access_log writes to
# the file too, at the end)
sub calls { $l->chats($_[0], \@ids) }
sub lines { $l->usage_lines(@_) }
sub check { $l->check_lines($_[0], \@ids, @_[1 .. $#_]) }

my @w = $t->_workers;
is(scalar @w, 2, 'two workers');

is(calls(20), 20, '20 calls');
is(scalar lines(1, 1), 0, 'their lines wait in the buffer (flush=1h)');

# SIGKILL: the worker gets no chance to write; its replacement does

is(scalar $t->kill_workers, 2, 'nginx started two workers in their place');

check('after SIGKILL', lines(scalar @ids, 10));
my $left = 'airlock: writing \d+ bytes of lines to "[^"]*usage\.log" '
         . 'that process \d+ left';
like($t->read_file('error.log') // '', qr/$left/,
     'the error log says who wrote them');

# the new workers took regions again: more calls wait, a reload writes
# them (the old workers write theirs as they exit)

is(calls(10), 10, '10 more calls');
is(scalar lines(scalar @ids, 0.5), 30 - 10, 'the new calls\' lines wait');

$t->reload;
check('after a reload', lines(scalar @ids, 10));

# flush=1s, by a reload (the zone is kept: same file, same size): a line
# is written a second after its call, with no more traffic

sub conf {
    my (%o) = @_;
    return $t->expand($l->conf(%o))
           =~ s/worker_processes 1;/worker_processes 2;/r;
}

$t->write_file('nginx.conf', conf(log => ' buffer=64k flush=1s'));
$t->reload;
is(calls(1), 1, 'a call with flush=1s');
check('flush=1s, no more traffic', lines(scalar @ids, 10));

# three seconds of calls to both workers: each looks at the other's
# region, holding lines, once a second, and leaves it to its owner, alive
my $offset = length($t->read_file('error.log') // '');
my $until = time + 3.5;
calls(1) while time < $until;
check('flush=1s, three seconds of calls', lines(scalar @ids, 10));
my $since = substr($t->read_file('error.log') // '', $offset);
unlike($since, qr/that process \d+ left/,
       'no worker took a region of a live one');

# an access_log naming the same file writes through the file's buffer as
# nginx finds it (file->data): the process's own, not the region, so the
# region's length stays true.  30 calls, then 100 requests only the
# access_log logs (404s: they fill a 4k buffer and write it), then
# SIGKILL: every usage line once, every line whole.

$t->write_file('nginx.conf',
               conf(log => ' buffer=4k flush=1h')
               =~ s{/access\.log llm;}{/usage.log llm;}r);
$t->reload;
is(calls(30), 30, '30 calls, the access_log in the same file');
is(scalar(grep { $_->{status} == 404 }
          map { $l->request('GET', '/nothing') } 1 .. 100),
   100, '100 requests the access_log alone logs');

$t->kill_workers;
check('an access_log too, after SIGKILL', lines(scalar @ids, 10));
my @other = grep { !/^\{/ } split /\n/, $t->read_file('usage.log') // '';
is(scalar(grep { !/^(?:\w+ openai gpt-\S+ 200 \d+ \d+ response |- - - 404 )/ }
          @other),
   0, 'the access_log\'s lines are whole')
    or diag explain \@other;

# a large buffer and eight workers: 18 regions of 1m, and the slab
# pool's record of each page, fit the zone

$t->write_file('nginx.conf',
               $t->expand($l->conf(log => ' buffer=1m flush=1h'))
               =~ s/worker_processes 1;/worker_processes 8;/r);
ok(eval { $t->reload; 1 }, 'buffer=1m, eight workers: reloaded')
    or diag $@;
is(calls(3), 3, 'calls with buffer=1m');

is(calls(5), 5, '5 more calls');
$t->stop;
check('after stop', lines(scalar @ids, 5));

unlike($t->read_file('error.log') // '', qr/no free region/,
       'every worker had a region');
