#!/usr/bin/perl

# airlock ask --json: each line it prints is JSON, the event the agent
# sent, whatever white space the event's line held.  A CR in an event's
# JSON is white space between its tokens (a string holds none raw), as
# the one that ends a text/event-stream line sent with CRLF: escaped
# like a control in a string, it was a "\u000d" outside any string, and
# the line did not decode.  Found by tests/fuzz/fuzz_agent_cli.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;

my $t = Airlock::Test->new;
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";

plan tests => 8;

sub run_cli {
    my (@args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$d/cli.out");
        open(STDERR, '>', "$d/cli.err");
        exec($cli, @args) or exit 127;
    }
    waitpid($pid, 0);
    return ($? >> 8, $t->read_file('cli.out'), $t->read_file('cli.err'));
}

# a fake agent: the events' lines end with CRLF, one has a CR between
# its tokens, one a C1 control and a DEL in a string
my $fake = "$d/fake-agent.sock";
$t->write_file('fake-agent.pl', <<'PL');
use strict;
use warnings;
use IO::Socket::UNIX;

my $sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        . "Connection: close\r\n\r\n"
        . qq(event: run\r\ndata: {"type":"run","session":"crlf"}\r\n\r\n)
        . qq(data: {"type":"answer",\r"text":"a\xc2\x9bb\x7f\\r"}\r\n\r\n)
        . qq(data: {"type":"done","outcome":"answer","steps":1,)
        . qq("tokens":1,"ms":1}\r\n\r\n);
$SIG{PIPE} = 'IGNORE';
unlink $ARGV[0];
my $s = IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 8) or die $!;
while (my $c = $s->accept) {
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        sysread($c, $req, 4096, length $req) or last;
    }
    my ($len) = $req =~ /^Content-Length: (\d+)/mi;
    while (length($req) - index($req, "\r\n\r\n") - 4 < ($len // 0)) {
        sysread($c, $req, 4096, length $req) or last;
    }
    print {$c} $sse;
    close $c;
}
PL
$t->run_daemon('/usr/bin/perl', "$d/fake-agent.pl", $fake);
$t->wait_for_port("unix:$fake") or die "the fake agent did not start";

my $raw = qr/[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]/;

my ($rc, $out, $err) = run_cli('ask', '--socket', $fake, '--session',
                               'crlf', '--json', 'load?');
is($rc, 0, '--json: exit 0');

my @lines = split /\n/, $out;
is(scalar @lines, 3, '--json: an event a line');

my @ev = map { my $l = $_; eval { decode_json($l) } } @lines;
is(scalar(grep { defined } @ev), 3, '--json: every line decodes')
    or diag(explain \@lines);
is($ev[0] && $ev[0]{type}, 'run', '--json: the first event');
is($ev[1] && $ev[1]{text}, "a\x{9b}b\x{7f}\r",
   '--json: the answer as the agent sent it, a CR in it escaped');
is($ev[2] && $ev[2]{type}, 'done', '--json: the last event');
unlike($out, $raw, '--json: no control character reaches the terminal');

# shown as lines, the same events: the answer's controls escaped
($rc, $out) = run_cli('ask', '--socket', $fake, '--session', 'crlf',
                      'load?');
is($out, "a\\u009bb\\u007f\\u000d\n", 'shown: the answer, escaped');
