#!/usr/bin/perl
# A receiver that quotes a webhook's URL otherwise than alertd sent it
# does not put the URL's secret in the log.
#
# alertd logs the start of an answer that refuses an alert, with every
# piece of the sink's path (and userinfo) of 4 bytes or more taken out
# of it (41-refusals.t).  That took out a piece only as the URL has it:
# a server that quotes the request decoded ("+" as a space, as a form
# is) or encoded otherwise (bytes the URL has as they are percent-
# encoded, in lower- or upper-case hex, "+" as "%20") had the secret
# logged.  Now the piece decoded is taken out too, however the answer
# encodes it; a piece too short for a secret, decoded or not, stays.
#
# The receiver (AlertdTest::answering_server, as 41-refusals.t's)
# answers each POST with the status and the quoting that the alert's
# reason names: 404, but 500 to an alert whose reason is "fivexx" and
# 200 to one whose reason is "ok".  An alert answered 500 three times
# is passed over for the next, and once the sink took that one, its
# next 500 is logged with the answer (a receiver that fails on one
# alert alone, alerts.md's retries): that answer is scrubbed as well.
# Nothing is timed: the test waits for the log lines.

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

# as the alert's reason says: the status, and how the target is quoted
sub answer {
    my ($target, $body) = @_;
    my ($reason) = $body =~ /"reason":"([a-z]+)"/;
    $reason //= '?';

    (my $q = $target) =~ tr/+/ /;
    my $status = '404 Not Found';
    if ($reason eq 'lower') {
        ($q = $target) =~ s{([!*'()+])}{sprintf('%%%02x', ord $1)}ge;
    } elsif ($reason eq 'upper') {
        ($q = $target) =~ s{([!*'()+])}{sprintf('%%%02X', ord $1)}ge;
    } elsif ($reason eq 'every') {
        ($q = $target) =~ s{([^/])}{sprintf('%%%02X', ord $1)}ge;
    } elsif ($reason eq 'space') {
        ($q = $target) =~ s{\+}{%20}g;
    } elsif ($reason eq 'ok') {
        $status = '200 OK';
    } elsif ($reason eq 'fivexx') {
        $status = '500 Internal Server Error';
    }

    return ($status, $status =~ /^200/ ? '' : "Cannot POST $q");
}

my $t = AlertdTest->new;
$t->secret('hook', 'whsec_FAKE' . 'G' x 28);

my $port = $t->answering_server(\&answer);
ok($port, 'the receiver runs');

my $url = "http://127.0.0.1:$port/hook/$piece/$short";
$t->policy({ webhook => $url, secret => 'hook' });
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');
ok($t->log_has(qr/\binfo: started /), 'alertd runs with the sink')
    or BAIL_OUT($t->alertd_log);
my $label = quotemeta AlertdTest::label($url);

my %said = (
    decoded => 'decoded as a form is, "+" a space',
    lower   => 'encoded, lower-case hex',
    upper   => 'encoded, upper-case hex',
    every   => 'every byte encoded',
    space   => '"+" encoded as a space',
);

# "hook" is a piece of 4 bytes too; "v+1" is kept
my %kept = (
    decoded => qr{/\.\.\./\.\.\./v 1},
    lower   => qr{/\.\.\./\.\.\./v%2b1},
    upper   => qr{/\.\.\./\.\.\./v%2B1},
    every   => qr{/\.\.\./\.\.\./%76%2B%31},
    space   => qr{/\.\.\./\.\.\./v%201},
);

for my $how (qw(decoded lower upper every space)) {
    my $a = $t->alert(client => "agent-$how", reason => $how);
    ok($t->log_has(qr/\berror: webhook $label refused alert \Q$a\E (?#
                     )with HTTP 404: Cannot POST /),
       "$said{$how}: the refusal is logged with the answer")
        or diag($t->alertd_log);
    my ($line) = $t->alertd_log =~ /^(.*refused alert \Q$a\E .*)$/m;
    like($line // '', qr{Cannot POST $kept{$how} \(attempt},
         "$said{$how}: the path's secret taken out, "
         . 'the short pieces kept')
        or diag($line);
}

my $log = $t->alertd_log;
$t->done_logs;

# a 5xx on one alert alone: logged with its answer, decoded

my $u = AlertdTest->new;
$u->secret('hook', 'whsec_FAKE' . 'H' x 28);
my $port5 = $u->answering_server(\&answer);
ok($port5, 'the second receiver runs');
my $url5 = "http://127.0.0.1:$port5/hook/$piece/$short";
$u->policy({ webhook => $url5, secret => 'hook' });
$u->append('');
$u->alertd('--poll-interval', '1h', '--repeat-interval', '1h');
my $label5 = quotemeta AlertdTest::label($url5);

my $f = $u->alert(client => 'agent-five', reason => 'fivexx');
my $ok = $u->alert(client => 'agent-ok', reason => 'ok');
ok($u->log_has(qr/\berror: webhook $label5: alert \Q$f\E not delivered: (?#
                 )HTTP 500: Cannot POST /, 120),
   'a 500 on one alert alone, once the sink took another: logged with '
   . 'the answer') or diag($u->alertd_log);
my ($line) = $u->alertd_log =~ /^(.*alert \Q$f\E not delivered: HTTP 500: .*)$/m;
like($line // '', qr{Cannot POST /\.\.\./\.\.\./v 1 \(},
     'the secret taken out of it') or diag($line);
$log .= $u->alertd_log;

for my $secret ('FAKE!', 'FAKE%21', 'tok*en', 'tok%2aen', 'en ab', 'en+ab', 'en%20ab',
                'en%2bab', 'ab\'(', 'ab%27%28', '0123456789', '%46%41')
{
    unlike($log, qr/\Q$secret\E/i, "the log does not hold $secret");
}

$u->done;
