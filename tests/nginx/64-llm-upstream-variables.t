#!/usr/bin/perl

# ngx_http_airlock_llm_module: $upstream_http_NAME is scrubbed of the
# provider key as the provider's headers are (63-airlock-upstream-
# variables.t for named routes).  The provider echoes the key it got in
# X-Echo-Auth; an add_header and a log_format that print it get
# "[REDACTED]", JSON and streamed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(
    http => q{log_format echoed 'echoed=$upstream_http_x_echo_auth';},
    location => q{add_header X-Copy $upstream_http_x_echo_auth always;
            access_log %%TESTDIR%%/echoed.log echoed;});
$t->write_file('echoed.log', '');
$t->run;

plan tests => 2 * 4 + 1;

for my $stream (0, 1) {
    my $name = $stream ? 'streamed' : 'JSON';

    $l->script({ echo_auth => 1 });

    my $r = $l->chat(token => $l->token('agent'),
                     $stream ? (fields => { stream => JSON::PP::true })
                             : ());

    is($r->{status}, 200, "$name: 200");
    is(Airlock::LLM::leaks($r->{raw}), 0, "$name: no key in the answer");
    like($r->{headers}{'x-copy'} // '', qr/\[REDACTED\]/,
         "$name: add_header \$upstream_http_NAME scrubbed");

    my $line = log_line('echoed.log', $stream + 1);
    ok(Airlock::LLM::leaks($line) == 0
       && $line =~ /^echoed=.*\[REDACTED\]/,
       "$name: the log_format line has it scrubbed") or diag $line;
}

# line N of FILE, waiting for it: the log phase runs after the client has
# the answer
sub log_line {
    my ($file, $n) = @_;
    my $deadline = time + 30;

    for (;;) {
        my @l = grep { length } split /\n/, $t->read_file($file) // '';
        return $l[$n - 1] if @l >= $n || time > $deadline;
        sleep 0.02;
    }
}

is($t->error_log_check(qr/scrubbed an injected credential/), '',
   'no alerts or sanitizer reports');
