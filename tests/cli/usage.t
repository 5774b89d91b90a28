#!/usr/bin/perl
# airlockctl usage: the LLM usage log summarised in total and by client,
# model and day, as a table and as JSON; costs summed exactly; truncated
# and garbage lines skipped, counted and named, never a crash; standard
# input; a log larger than the memory it may use, read as a stream.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $dir = tempdir(CLEANUP => 1);

if (!-x $ctl) {
    plan skip_all => "$ctl not built" unless $ENV{CI};
    fail("$ctl not built");
    done_testing();
    exit 1;
}

sub line {
    my (%f) = @_;
    my %l = (time => '2024-07-03T09:46:40.123Z', request_id => 'r',
             client => 'agent', provider => 'openai', endpoint => 'chat',
             model => 'gpt-4o-mini', prompt_tokens => 10,
             completion_tokens => 2, cached_tokens => 0, total_tokens => 12,
             status => 200, latency_ms => 5, ttfb_ms => 3,
             stream => JSON::PP::false, usage_source => 'response', %f);
    my $cost = delete $l{cost_usd};
    my $j = JSON::PP->new->canonical->encode(\%l);
    # the gateway writes cost_usd last, as decimal text
    $j =~ s/\}$/,"cost_usd":$cost}/ if defined $cost;
    $j =~ s/\}$/,"cost_usd":null}/ unless defined $cost;
    return "$j\n";
}

my $j;
my $log = join '',
    line(cost_usd => '0.00024', prompt_tokens => 1000, cached_tokens => 400,
         completion_tokens => 200, total_tokens => 1200),
    line(client => 'worker', model => 'gpt-4o', status => 500,
         prompt_tokens => 0, completion_tokens => 0, total_tokens => 0),
    "this is not JSON\n",
    "\n",
    line(time => '2024-07-04T00:00:01.000Z', cost_usd => '0.000001',
         client => "wor\x{1b}ker"),
    line(status => 429, cost_usd => '0'),
    '{"time":"2024-07-04T00:00:02.000Z","client":"agent","model":"gpt-4o-'
        . 'mini","prompt_tok';

open my $fh, '>', "$dir/usage.log" or die;
print $fh $log;
close $fh;

sub run {
    my ($args, $stdin) = @_;
    my $out;
    if (defined $stdin) {
        open my $in, '>', "$dir/stdin" or die;
        print $in $stdin;
        close $in;
        $out = `$ctl usage $args < $dir/stdin 2>&1`;
    } else {
        $out = `$ctl usage $args 2>&1`;
    }
    return ($? >> 8, $out);
}

# ---- the table ----------------------------------------------------------------

my ($rc, $out) = run("$dir/usage.log");
is($rc, 0, 'a log with bad lines: exit 0');
like($out, qr/^total\s+4\s+2\s+1020\s+400\s+204\s+1224\s+0\.000241\s+1$/m,
     'total: requests, errors, prompt, cached, completion, total, cost, '
     . 'unpriced') or diag($out);
like($out, qr/^status: 200: 2, 429: 1, 500: 1$/m, 'statuses seen');
like($out, qr/^lines: 7 read, 4 counted, 2 skipped$/m,
     'lines read, counted, skipped (the blank one is neither)');
like($out, qr/^  line 3: not JSON/m, 'the garbage line is named');
like($out, qr/^  line 7: not JSON \(cut short\?\)/m,
     'the truncated last line is named');

($rc, $out) = run("$dir/usage.log --by client");
like($out, qr/^CLIENT\s+REQUESTS/m, 'by client: a CLIENT column');
like($out, qr/^agent\s+2\s+1\s+1010\s+400\s+202\s+1212\s+0\.00024\s+0$/m,
     'by client: agent') or diag($out);
like($out, qr/^worker\s+1\s+1\s+0\s+0\s+0\s+0\s+-\s+1$/m,
     'by client: worker, unpriced only: cost -');
like($out, qr/^wor\\x1bker\s+1/m,
     'a control byte in a name is not printed, but shown as \\xHH');

($rc, $out) = run("--by model $dir/usage.log");
like($out, qr/^gpt-4o\s+1\s/m, 'by model: gpt-4o');
like($out, qr/^gpt-4o-mini\s+3\s/m, 'by model: gpt-4o-mini');

($rc, $out) = run("$dir/usage.log --by day");
like($out, qr/^2024-07-03\s+3\s.*^2024-07-04\s+1\s/ms,
     'by day, in order');

# a time the gateway does not write is a bad line, not a day of its own:
# only the first line, on a leap day, is counted
my @bad_times = ('2024-13-03T09:46:40.123Z', '2024-07-32T00:00:00.000Z',
                 '2023-02-29T00:00:00.000Z', '2024-07-0xT00:00:00.000Z',
                 '2024-07-03T24:00:00.000Z', '2024-07-03',
                 '2024-07-03garbage', '2024-07-03T09:46:40.123+02:00',
                 '2024-07-03T09:46:40.Z', '2024-07-03T09:46:40.123');
my $times = line(time => '2024-02-29T23:59:59.999Z')
            . join '', map { line(time => $_) } @bad_times;
($rc, $out) = run('- --by day', $times);
is($rc, 0, 'malformed times: exit 0');
like($out, qr/^2024-02-29\s+1\s/m, 'a leap day is a day') or diag($out);
is(scalar(() = $out =~ /^\d{4}-\S+\s+\d+\s/mg), 1,
   'a malformed time is not a day of its own') or diag($out);
like($out, qr/^lines: 11 read, 1 counted, 10 skipped$/m,
     'malformed times: counted as skipped lines') or diag($out);
like($out, qr/^  line 2: no "time" as the gateway writes it$/m,
     'a malformed time: the line named, with the reason') or diag($out);
($rc, $out) = run('- --by day --json', $times);
$j = eval { decode_json($out) };
is($j && scalar @{$j->{groups}}, 1, 'json: one day, the leap day')
    or diag($out);
is($j && $j->{lines}{skipped}, 10, 'json: the malformed times skipped');

# ---- JSON and standard input ------------------------------------------------------

($rc, $out) = run('- --by day --json', $log);
is($rc, 0, 'standard input: exit 0');
$j = eval { decode_json($out) };
ok($j, 'one JSON object') or diag($out);
is($j->{by}, 'day', 'json: by');
is(scalar @{$j->{groups}}, 2, 'json: two days');
is($j->{groups}[0]{key}, '2024-07-03', 'json: the first day');
is_deeply($j->{groups}[0]{status}, { 200 => 1, 429 => 1, 500 => 1 },
          'json: statuses of the day');
is($j->{total}{requests}, 4, 'json: total requests');
like($out, qr/"cost_usd":0\.000241,"unpriced_requests":1,"status":\{[^}]*\}\},"lines"/,
     'json: the total cost as exact decimal text');
is($j->{lines}{skipped}, 2, 'json: skipped');
is_deeply([ map { $_->{line} } @{$j->{lines}{first_skipped}} ], [3, 7],
          'json: the skipped lines named');

# ---- exact sums ---------------------------------------------------------------------

# 100000 calls of $0.000000000007 (7 picodollars) sum to exactly $0.0000007;
# in floating point the sum would drift
($rc, $out) = run('- --json',
                  line(cost_usd => '0.000000000007') x 100000);
like($out, qr/"total":\{"requests":100000,.*"cost_usd":0\.0000007,/,
     'a hundred thousand tiny costs add up exactly');

# a cost in exponent form is read from its double: up to $10 million, past
# what a signed 64-bit count of picodollars holds ($9223372.036854775807)
($rc, $out) = run('- --json', line(cost_usd => '9.3e6')
                              . line(cost_usd => '1.5e-3', client => 'b'));
like($out, qr/"total":\{"requests":2,.*"cost_usd":9300000\.0015,/,
     'a cost in exponent form near the largest one, exactly')
    or diag($out);

# the line's own cost_usd, not one in an object nested after it
($rc, $out) = run('- --json', line(cost_usd => '0.1,"x":{"cost_usd":99}'));
like($out, qr/"total":\{"requests":1,.*"cost_usd":0\.1,/,
     'a "cost_usd" nested after the line\'s own is not its cost')
    or diag($out);

# ---- sums past 64 bits -----------------------------------------------------------------

# $36000001 is past the $18446744.073709551615 a uint64_t of picodollars
# holds: summed exactly, the picodollars carried into the dollars
my $dear = line(cost_usd => '18000000.000000000001')
           . line(cost_usd => '0.999999999999', client => 'b')
           . line(cost_usd => '18000000', client => 'b');
($rc, $out) = run('- --json', $dear);
like($out, qr/"total":\{"requests":3,.*"cost_usd":36000001,/,
     'a cost total past 2^64 picodollars, exactly') or diag($out);
($rc, $out) = run('- --by client', $dear);
like($out, qr/^b\s+2\s.*\s18000000\.999999999999\s+0$/m,
     'a client past 2^64 picodollars, exactly (table)') or diag($out);
like($out, qr/^total\s+3\s.*\s36000001\s+0$/m,
     'the total past 2^64 picodollars, exactly (table)') or diag($out);

# token counts whose sum does not fit in 64 bits: shown as such, never as
# the number the sum stopped at
my $many = line(prompt_tokens => 9223372036854775807,
                total_tokens => 9223372036854775807, cost_usd => '1') x 3;
($rc, $out) = run('- --by client', $many);
is($rc, 0, 'token sums past 2^64: exit 0');
like($out, qr/^agent\s+3\s+0\s+overflow\s+0\s+6\s+overflow\s+3\s+0$/m,
     'token sums past 2^64: "overflow", the other sums as they are')
    or diag($out);
unlike($out, qr/^(agent|total)\s.*18446744073709551615/m,
       'token sums past 2^64: not the number the sum stopped at')
    or diag($out);
like($out, qr/^overflow: a sum over 18446744073709551615 /m,
     'token sums past 2^64: a note says why') or diag($out);
($rc, $out) = run('- --json', $many);
$j = eval { decode_json($out) };
ok($j && exists $j->{total}{prompt_tokens}
   && !defined $j->{total}{prompt_tokens}
   && !defined $j->{total}{total_tokens}, 'json: sums past 2^64 are null')
    or diag($out);
is($j && $j->{total}{completion_tokens}, 6, 'json: the others are numbers');

# ---- robustness ----------------------------------------------------------------------

my $junk = ('x' x 200000) . "\n";
$junk .= join '', map { chr(int(rand(256))) } 1 .. 20000;
$junk .= "\n" . ('{' x 5000) . "\n"
         . '{"time":1,"client":"a","model":"m","status":200}' . "\n"
         . line(status => 99) . line(prompt_tokens => -1)
         . line(cost_usd => '"1"') . line(cost_usd => '-1')
         . line(status => 200, cost_usd => '1e-3');
($rc, $out) = run('- --by model', $junk);
is($rc, 0, 'random bytes, deep nesting, a 200 kB line: no crash');
like($out, qr/^total\s+1\s.*\s0\.001\s+0$/m,
     'only the one good line counted (cost in exponent form)')
    or diag($out);
like($out, qr/longer than a usage line/, 'the long line named as such')
    or diag($out);

($rc, $out) = run("$dir/nonexistent.log");
is($rc, 2, 'a missing log: exit 2');
like($out, qr/cannot open/, 'a missing log: says so');

($rc, $out) = run("$dir/usage.log --by week");
is($rc, 2, '--by week: usage error');

($rc, $out) = run('');
is($rc, 2, 'no log: usage error');

# ---- streaming ----------------------------------------------------------------------

# 300000 lines (about 60 MB) through a pipe, with 40 MB of address space:
# a whole-file load could not fit
SKIP: {
    my $ldd = `ldd $ctl 2>/dev/null` // '';
    skip 'sanitizer build: address-space limits do not apply', 2
        if $ldd =~ /libasan|libubsan/;

    my $one = line(cost_usd => '0.000001');
    my $n = 300000;
    open my $o, '>', "$dir/one" or die;
    print $o $one;
    close $o;
    my $pid = open(my $p, '-|') // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT;
        exec('/bin/sh', '-c',
             "perl -e 'my \$l = <STDIN>; print \$l for 1 .. $n' "
             . "< $dir/one | (ulimit -v 40000; exec $ctl usage - "
             . "--by client)");
        exit 127;
    }
    my $res = do { local $/; <$p> };
    close $p;
    is($? >> 8, 0, "$n lines with 40 MB of address space: exit 0")
        or diag($res);
    like($res, qr/^total\s+$n\s.*\s0\.3\s+0$/m,
         "$n lines counted, \$0.3 exactly") or diag($res);
}

done_testing();
