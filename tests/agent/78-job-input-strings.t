#!/usr/bin/perl

# airlock-agent: a run_python input is sent to the worker as the agent
# checked it.  The agent built and checked each input's target from its
# params and query (a number written as a tool call's target writes it,
# al_route_target()), then put the model's params and query in the job
# as the model wrote them: a number stayed a number, a param the route
# does not have stayed too, and the worker (aw_input_parse()) refuses
# both (bad_envelope), after the job was queued and awaited.  So did it
# refuse two inputs of one name and a body on a route whose methods take
# none (or none where they all take one).  Now the job carries the
# strings of the target it checked, the route's params only, and what
# the worker would refuse is a bad_tool_arguments error, no job queued.
# Booleans, null, objects and lists as values, and a target over the
# limit, were refused already (by both); tool calls keep writing numbers.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--max-wall', 20000 ]);
$a->start_worker;

plan tests => 14;

my %route_params = ('logs' => [ 'service' ], 'prometheus-query' => []);

# an input as the worker takes it (aw_input_parse()), else why not
sub worker_refuses {
    my ($in, $seen) = @_;
    my %ok = map { $_ => 1 } qw(name route params query body);
    for (sort keys %$in) {
        return "unknown field $_" unless $ok{$_};
    }
    return "two inputs named $in->{name}" if $seen->{ $in->{name} }++;
    my $p = $in->{params} // {};
    return 'params not an object' unless ref $p eq 'HASH';
    my $want = join ',', @{ $route_params{ $in->{route} } // [] };
    return "params " . join(',', sort keys %$p) . ", route takes $want"
        unless join(',', sort keys %$p) eq $want;
    for (values %$p) {
        return 'a param not a string'
            if ref $_ || !length $_ || B::svref_2object(\$_)->FLAGS
                                        & (B::SVp_IOK() | B::SVp_NOK());
    }
    my $q = $in->{query} // {};
    return 'query not an object' unless ref $q eq 'HASH';
    for (values %$q) {
        return 'a query value not a string'
            if ref $_ || B::svref_2object(\$_)->FLAGS
                         & (B::SVp_IOK() | B::SVp_NOK());
    }
    return 'a body on a GET route' if exists $in->{body};
    return '';
}

# the envelopes queued since the last look, each input checked
my $looked = 0;
sub queued {
    my @all = $a->jsonl('jobs.log');
    my @new = @all[ $looked .. $#all ];
    $looked = @all;
    my @why;
    for my $l (@new) {
        my $job = JSON::PP->new->decode($l->{job});
        my %seen;
        for my $in (@{ $job->{blueprint}{inputs} // [] }) {
            my $w = worker_refuses($in, \%seen);
            push @why, $w if length $w;
        }
    }
    return (scalar @new, join('; ', @why), @new);
}

sub job {
    my (@inputs) = @_;
    return { name => 'run_python', arguments => {
        script => "print(42)\n", inputs => \@inputs } };
}

use B;

# ---- what the worker refuses, refused up front -----------------------------

$a->script({ tool_calls => [
               job({ name => 'a', route => 'logs',
                     params => { service => 'api' } },
                   { name => 'a', route => 'prometheus-query',
                     query => { query => 'up' } }),
               job({ name => 'b', route => 'logs',
                     params => { service => 'api' }, body => { x => 1 } }),
             ] },
           { pieces => [ 'done' ] });
my $ev = $a->ask('strings-1', 'two jobs the worker refuses');

my @err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err),
   'bad_tool_arguments,bad_tool_arguments',
   'two inputs of one name, a body on a GET route: bad_tool_arguments')
    or diag explain \@err;
like(join("\n", map { $_->{message} } @err),
     qr/input 1: the name "a".*\n.*input 0: route "logs" takes no "body"/,
     'each message says which input and why');
my ($n, $why) = queued();
is($n, 0, 'no job queued');

# ---- shapes both refuse, still refused ------------------------------------

$a->script({ tool_calls => [
               map { job({ name => 'c', route => 'logs',
                           params => { service => $_ } }) }
                   JSON::PP::true, undef, { x => 1 }, [ 'api' ] ] },
           { tool_calls => [
               map { job({ name => 'c', route => 'prometheus-query',
                           query => { query => $_ } }) }
                   JSON::PP::false, undef, { x => 1 }, [ 'up' ],
                   'u' x 9000 ] },
           { pieces => [ 'done' ] });
$ev = $a->ask('strings-2', 'values no worker takes');

@err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err), join(',', ('bad_tool_arguments') x 9),
   'a boolean, null, object or list value, a target too long: refused')
    or diag explain \@err;
($n) = queued();
is($n, 0, 'no job queued for them');

# ---- tool calls write numbers in the target --------------------------------

$a->script({ tool_calls => [
               { name => 'logs', arguments => {
                   params => { service => 7 }, query => { limit => 30 } } },
               { name => 'prometheus-query', arguments => {
                   query => { query => 1.5 } } },
               { name => 'prometheus-query', arguments => {
                   query => { query => 0.1 } } } ] },
           { pieces => [ 'done' ] });
$ev = $a->ask('strings-3', 'numbers in a tool call');
is(join(' ', map { $_->{target} } of_type('tool_call', $ev)),
   '/logs/7?limit=30 /prometheus/query?query=1.5 /prometheus/query?query=0.1',
   'a tool call\'s numbers: written in its target');

# ---- a job: the strings the target was built from, the route's params ------

$a->script({ tool_calls => [
               job({ name => 'd', route => 'prometheus-query',
                     params => { stray => 1 },
                     query => { query => 'up', time => 1.5 } },
                   { name => 'e', route => 'logs',
                     params => { service => 'api', other => 'x' },
                     query => { limit => 30, since => '5m' } }),
               job({ name => 'f', route => 'logs',
                     params => { service => 7 } }) ] },
           { pieces => [ 'done' ] });
$ev = $a->ask('strings-4', 'jobs with numbers');

is(scalar(of_type('error', $ev)), 0, 'no error');
my @new;
($n, $why, @new) = queued();
is($n, 2, 'both jobs queued');
is($why, '', 'each input one the worker takes');

my @in = map { @{ JSON::PP->new->decode($_->{job})->{blueprint}{inputs} } }
         @new;
is_deeply($in[0], { name => 'd', route => 'prometheus-query',
                    query => { query => 'up', time => '1.5' } },
          'a route without params: none sent; a real number as a string');
is_deeply($in[1], { name => 'e', route => 'logs',
                    params => { service => 'api' },
                    query => { limit => '30', since => '5m' } },
          'the route\'s param only; an integer as a string');
is_deeply($in[2], { name => 'f', route => 'logs',
                    params => { service => '7' } },
          'a number path param as a string');
is(join(',', map { $_->{status} // '' } of_type('job', $ev)), 'ok,ok',
   'both jobs run');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
