#!/usr/bin/perl
# A receiver that quotes a webhook's URL percent-encoded twice ("%2541"
# for "A": the request escaped, then the escapes escaped again, as a
# server that encodes what it already encoded does) does not put the
# URL's secret in the log.
#
# alertd logs the start of an answer that refuses an alert with every
# piece of the sink's path of 4 bytes or more taken out, as the URL has
# it and percent-decoded once (41-refusals.t, 83-decoded-path.t).  An
# answer encoded twice decodes once to the piece's escapes, not to the
# piece: it was logged, and the secret with it.  The answer is now
# decoded twice as well; a piece too short for a secret stays.
#
# The receiver (AlertdTest::answering_server) answers 404 to every POST,
# "Cannot POST <target>" with the target as the alert's reason says:
# every byte but "/" encoded twice ("twice"), or its "+" and the bytes
# "!*'()" only ("some").  Nothing is timed: the test waits for the log
# lines.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

# the secret as the URL has it (a path has no escapes: policy.md), and
# a piece too short for a secret
my $piece = "FAKE!tok*en+ab'(0123456789)";
my $short = 'v+1';

sub answer {
    my ($target, $body) = @_;
    my ($reason) = $body =~ /"reason":"([a-z]+)"/;
    my $q = $target;

    if (($reason // '') eq 'twice') {
        $q =~ s{([^/])}{sprintf('%%25%02X', ord $1)}ge;
    } else {
        $q =~ s{([!*'()+])}{sprintf('%%25%02x', ord $1)}ge;
    }

    return ('404 Not Found', "Cannot POST $q");
}

my $t = AlertdTest->new;
$t->secret('hook', 'whsec_FAKE' . 'J' x 28);
my $port = $t->answering_server(\&answer);
ok($port, 'the receiver runs');

my $url = "http://127.0.0.1:$port/hook/$piece/$short";
$t->policy({ webhook => $url, secret => 'hook' });
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');
my $label = quotemeta AlertdTest::label($url);

# "hook" is a piece of 4 bytes too; "v+1" is kept
my %kept = (
    twice => qr{/\.\.\./\.\.\./%2576%252B%2531},
    some  => qr{/\.\.\./\.\.\./v%252b1},
);
my %said = (
    twice => 'every byte encoded twice',
    some  => 'some bytes encoded twice',
);

for my $how (qw(twice some)) {
    my $a = $t->alert(client => "agent-$how", reason => $how);
    ok($t->log_has(qr/\berror: webhook $label refused alert \Q$a\E (?#
                     )with HTTP 404: Cannot POST /),
       "$said{$how}: the refusal is logged with the answer")
        or diag($t->alertd_log);
    my ($line) = $t->alertd_log =~ /^(.*refused alert \Q$a\E .*)$/m;
    like($line // '', qr{Cannot POST $kept{$how} \(attempt},
         "$said{$how}: the path's secret taken out, the short piece kept")
        or diag($line);
}

my $log = $t->alertd_log;
for my $secret ('FAKE', '%2546%2541%254B%2545', 'tok%252aen',
                '%2574%256F%256B', 'en%252bab', '0123456789',
                '%2530%2531%2532%2533')
{
    unlike($log, qr/\Q$secret\E/i, "the log does not hold $secret");
}

$t->done;
