#!/usr/bin/perl

# ngx_http_airlock_module: a body that stops coming while Airlock reads it
# for the decision (client_body_timeout: nginx ends the request with 408)
# is refused as a bad chunk is (01-airlock-body-refused.t): one deny line
# with reason "refused", its client and route and "nginx answered 408
# while the body was read", counted toward the client's alerts, so a
# client that keeps sending bodies slowly is seen.  A request whose
# headers stop coming (client_header_timeout) is not counted: nothing was
# decided of it.  A body that comes in time writes no such line.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Time::HiRes qw(sleep time);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: raw
    clients: [local]
    match: { method: POST, path: /raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 100 }
  - name: in-time
    clients: [local]
    match: { method: POST, path: /in-time }
    upstream: echo
    to: /raw
    body: { max_bytes: 100 }
alerts:
  deny: { threshold: 2, window: 60s }
EOF

# /in-time: the same, with a client_body_timeout that a body sent in two
# writes 0.3s apart meets however loaded the machine
$t->write_file_expand('nginx.conf', $p->conf(key => 0,
    locations => <<'L',
        location = /in-time {
            airlock on;

            %%AIRLOCK_LOCATION%%

            client_body_timeout 60s;
            proxy_read_timeout 5s;
        }
L
    http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
    client_body_timeout 1s;
    client_header_timeout 1s;
EOF

$t->start_echo(8081);
$t->run;

plan tests => 12;

# nginx logs a request when it is done with it: wait for the line
sub deny_lines_after {
    my ($before, $wait) = @_;
    my $until = time + ($wait // 10);
    my @log;

    while (time < $until) {
        @log = $p->deny_log;
        last if @log > $before;
        sleep 0.05;
    }

    return @log;
}

my $head = "POST /raw HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";

# a body that stops: 10 bytes said, 3 sent, then nothing

for my $n (1, 2) {
    my $before = $p->deny_count;

    my $raw = http($head . "Content-Length: 10\r\n\r\nabc", timeout => 5);
    unlike($raw // '', qr/^HTTP\/1.1 200 /, "slow body $n: not forwarded");

    my @log = deny_lines_after($before);
    is(scalar(@log), $before + 1, "slow body $n: one deny line");
    my $l = $log[-1] // {};
    ok(($l->{reason} // '') eq 'refused' && ($l->{client} // '') eq 'local'
       && ($l->{route} // '') eq 'raw'
       && ($l->{detail} // '') eq 'nginx answered 408 while the body was '
                                  . 'read',
       "slow body $n: reason refused, client and route, 408 in the detail")
        or diag(explain($l));
}

is($p->echo_count, 0, 'the upstream got none of them');

# counted: the second crossed alerts.deny.threshold 2

my @alerts = grep { /"type":"alert"/ } split /\n/,
             $t->read_file('journal.log') // '';
like($alerts[0] // '',
     qr/"kind":"deny_threshold".*"client":"local".*"reason":"refused"/,
     'the slow bodies raise a deny_threshold alert');

# headers that stop: not counted (the request never reached a decision)

my $before = $p->deny_count;

http("POST /raw HTTP/1.1\r\nHost: localhost\r\n", timeout => 5);
my @log = deny_lines_after($before, 2);
is(scalar(@log), $before, 'slow headers: no deny line');

# a body that comes in time is decided as before

$before = $p->deny_count;

(my $in_time = $head) =~ s{^POST /raw }{POST /in-time };
my $raw = http([ $in_time . "Content-Length: 10\r\n\r\nabc", 'defghij' ],
               pause => 0.3, timeout => 30);
like($raw // '', qr/^HTTP\/1.1 200 /, 'a body in time: 200');

@log = deny_lines_after($before, 1);
is(scalar(@log), $before, 'a body in time: no deny line');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
