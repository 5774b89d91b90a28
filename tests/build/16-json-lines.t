#!/usr/bin/perl
# The tests' readers of JSON-lines logs (Airlock::Test json_lines(), and
# through it Airlock::LLM's usage_log() and provider_requests()) read a
# log while nginx or the provider fixture may still be appending to it:
# a last line without its "\n" is not written yet and is left for the
# next read, not parsed (38-llm-metrics-series.t once died on one).

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Test;
use Airlock::LLM;

my @l = json_lines(qq({"a":1}\n{"b":2}\n{"c":));
is_deeply(\@l, [{ a => 1 }, { b => 2 }], 'a line cut short is left out');

is_deeply([json_lines(qq({"a":1}\n\n{"b":2}\n))], [{ a => 1 }, { b => 2 }],
          'whole lines, an empty one skipped');
is_deeply([json_lines('{"a":1}')], [], 'no line ended yet: none');
is_deeply([json_lines(undef)], [], 'no file: none');

# the usage log read while a line of it is being written
my $t = Airlock::Test->new;
my $l = bless { t => $t }, 'Airlock::LLM';

$t->write_file('usage.log', qq({"request_id":"r1","prompt_tokens":3}\n)
                            . qq({"request_id":"r2","prompt_t));
my @u = eval { $l->usage_log };
is($@, '', 'usage_log() with a line being written does not die');
is(scalar @u, 1, 'and gives the line that is whole');
is($u[0]{request_id}, 'r1', 'the first one');

done_testing();
