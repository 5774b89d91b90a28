#!/usr/bin/perl

# ngx_http_airlock_llm_module: a request that names no output cap gets the
# client's default_max_tokens (or, for a client with a token budget and no
# caps, the built-in 4096), sent to the provider and reserved from the
# budget, so that concurrent calls cannot spend more than the budget
# together.  Six streams start at once against 100 tokens per minute; the
# provider holds every admitted one until all six have been answered or
# admitted, then each spends 41 tokens.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (open => 'al-open-token-111222333444555',
           bounded => 'al-bounded-token-666777888999');
my %sha = map { $_ => $l->proxy->token_sha256($tok{$_}) } keys %tok;

$l->setup(
    clients => qq{  open: { token_sha256: "$sha{open}" }\n}
               . qq{  bounded: { token_sha256: "$sha{bounded}" }\n},
    openai_clients => "      open:\n        tokens_per_minute: 100\n"
                      . "      bounded:\n        tokens_per_minute: 100\n"
                      . "        default_max_tokens: 30\n",
);

$t->run;

plan tests => 12;

my $wait = $t->testdir . '/go';

# Six streams at once for $who; returns the statuses, in order.
sub six_streams {
    my ($who) = @_;
    my $body = encode_json({
        model => 'gpt-4o-mini', stream => JSON::PP::true,
        messages => [ { role => 'user', content => 'x' x 60 } ],
    });
    my $req = "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
            . "Host: localhost\r\nAuthorization: Bearer $tok{$who}\r\n"
            . "Content-Type: application/json\r\n"
            . "Content-Length: " . length($body) . "\r\n"
            . "Connection: close\r\n\r\n$body";

    unlink $wait;
    $l->script_all({ wait_file => $wait, usage => { completion => 30 } });

    my $before = scalar(my @x = $l->provider_requests);
    my (@s, %raw, %done);

    for my $i (0 .. 5) {
        $s[$i] = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                       PeerPort => $t->port(8080),
                                       Proto => 'tcp', Timeout => 5)
            or die "connect: $!";
        $raw{$i} = '';
        syswrite($s[$i], $req);
    }

    my $sel = IO::Select->new(@s);
    my %idx = map { ($s[$_] => $_) } 0 .. 5;
    my $deadline = time + 30;        # safety net only
    my $released = 0;

    while (keys %done < 6 && time < $deadline) {
        my $held = scalar(my @y = $l->provider_requests) - $before;

        if (!$released && $held + keys %done >= 6) {
            $t->write_file('go', '');
            $released = 1;
        }

        for my $h ($sel->can_read(0.05)) {
            my $i = $idx{$h};
            my $n = sysread($h, my $buf, 65536);
            if ($n) {
                $raw{$i} .= $buf;
            } else {
                $done{$i} = 1;
                $sel->remove($h);
                close $h;
            }
        }
    }

    $t->write_file('go', '') unless $released;

    return map { $raw{$_} =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0 } 0 .. 5;
}

sub spent {
    my ($who, $count) = @_;
    my $deadline = time + 5;
    my @u;

    for (;;) {
        @u = grep { $_->{client} eq $who } $l->usage_log;
        last if @u >= $count || time > $deadline;
        sleep 0.02;
    }

    my $sum = 0;
    $sum += $_->{total_tokens} // 0 for grep { $_->{status} == 200 } @u;
    return $sum;
}

# ---- default_max_tokens -----------------------------------------------------

my @st = six_streams('bounded');
my $ok = grep { $_ == 200 } @st;

ok($ok >= 1, "bounded: some streams admitted ($ok)");
ok($ok + (grep { $_ == 429 } @st) == 6, "bounded: the others 429 (@st)");

my $spent = spent('bounded', 6);
ok($spent <= 100, "bounded: six concurrent streams spent $spent of 100");
ok($spent > 0, 'bounded: the admitted ones were charged');

my @pr = grep { ($_->{headers}{authorization} // '') ne '' }
         ($l->provider_requests)[-$ok .. -1];
is(scalar(grep { ($_->{body}{max_completion_tokens} // 0) == 30 } @pr),
   $ok, 'bounded: default_max_tokens sent as max_completion_tokens');

# a request with its own cap keeps it
my $r = $l->chat(token => $tok{bounded}, prompt => 'Hi',
                 fields => { max_completion_tokens => 5 });
ok($r->{status} == 200 || $r->{status} == 429, 'bounded: own cap call');
if ($r->{status} == 200) {
    is($l->last_provider_request->{body}{max_completion_tokens}, 5,
       'bounded: the request\'s own cap is kept');
} else {
    pass('bounded: over the minute already');
}

# ---- a budget without caps: the built-in default ----------------------------

@st = six_streams('open');
$ok = grep { $_ == 200 } @st;

$spent = spent('open', 6);
ok($spent <= 100, "open: six concurrent streams spent $spent of 100");
is($ok, 0, 'open: 4096 reserved per call never fits 100 a minute');
is(scalar(grep { $_ == 429 } @st), 6, "open: all 429 (@st)");

$r = $l->chat(token => $tok{open}, prompt => 'Hi');
is($r->{status}, 429, 'open: a call without a cap is refused');
like($r->{json}{error}{message} // '', qr/about \d+ tokens/,
     'open: the refusal says what it needs');
