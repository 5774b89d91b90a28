#!/usr/bin/perl
# airlockctl shows text it does not trust (a name from a usage log, a
# pattern, a parameter or a key of a policy, a request's parameter name)
# one to one: printable ASCII as it is, every other byte as \xHH, and a
# backslash as \\, so that every backslash shown starts an escape.  A
# backslash was shown as it is: a name holding the four characters \x01
# was shown as the one holding the byte 0x01, two clients read as one,
# and a log line could name a model that reads as another's.  What is
# shown decodes back to the text, one name to one row; no ESC, C1 control
# or bidirectional control reaches the terminal raw, in the table or in
# --json, whose keys are the names themselves.

use strict;
use warnings;
use FindBin;
use JSON::PP;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

# shown text back to its bytes: \\ is a backslash, \xHH the byte HH
sub unshown {
    my ($s) = @_;
    $s =~ s/\\(?:(\\)|x([0-9a-f]{2}))/defined $1 ? '\\' : chr hex $2/ge;
    return $s;
}

# printable ASCII and newlines, nothing a terminal acts on
sub printable {
    my ($out) = @_;
    return $out =~ /\A[\x20-\x7e\n]*\z/;
}

sub line {
    my ($client, $model, $prompt) = @_;
    return encode_json({ time => '2024-07-03T09:46:40.123Z',
                         client => $client, model => $model, status => 200,
                         prompt_tokens => $prompt, completion_tokens => 0,
                         total_tokens => $prompt, cost_usd => undef })
           . "\n";
}

# names alike but for a backslash, and names with what a terminal acts
# on: ESC, C1 controls (U+0080, U+009B CSI), bidi controls
my @names = ("c\\x01", "c\x01", "\\x1b[2K", "\e[2K", "d\\", "d\\\\",
             "d\\x5c", "d\\\\x5c", "u\x{80}v", "u\\xc2\\x80v",
             "u\x{9b}v", "r\x{202e}l", "r\\xe2\\x80\\xael", "r\x{202a}",
             "r\x{2066}", "r\x{2069}", "total", "\\x74otal",
             "\\\\x74otal", "(other)", "\\x28other)", "agent");

# the names as bytes, as the log holds them in UTF-8
my @bytes = map { my $b = $_; utf8::encode($b); $b } @names;

my $log = write_file('usage.log',
                     join '', map { line($names[$_], "m$_", $_ + 1) }
                                  0 .. $#names);
my $mlog = write_file('model.log',
                      join '', map { line('agent', $names[$_], $_ + 1) }
                                   0 .. $#names);

my $n = @names;

plan tests => 31;

# ---- usage: a row per name, each shown as no other ---------------------

for my $c (['client', $log], ['model', $mlog]) {
    my ($by, $path) = @$c;
    my ($rc, $out) = run_ctl('usage', $path, '--by', $by);

    is($rc, 0, "usage --by $by: summarised");
    ok(printable($out), "usage --by $by: printable ASCII alone")
        or diag(join ' ', map { sprintf '%02x', ord }
                          grep { /[^\x20-\x7e\n]/ } split //, $out);

    # the rows between the heading and the summary row "total"
    my @rows = split /\n/, $out;
    shift @rows;
    my @shown;
    for (@rows) {
        my $first = (split ' ', $_)[0] // '';
        last if $first eq 'total';
        push @shown, $first;
    }

    my %seen;
    is(scalar(grep { !$seen{$_}++ } @shown), $n,
       "usage --by $by: $n rows shown $n ways") or diag(explain \@shown);
    is_deeply([sort map { unshown($_) } @shown], [sort @bytes],
              "usage --by $by: each row decodes to its name")
        or diag(explain \@shown);

    my %want = map { $bytes[$_] => $_ + 1 } 0 .. $#bytes;
    my @wrong = grep { ((split ' ', $rows[$_])[3] // '')
                       ne ($want{unshown($shown[$_])} // '') } 0 .. $#shown;
    is(scalar @wrong, 0, "usage --by $by: each row's numbers are its name's")
        or diag(explain [@rows[@wrong]]);

    like($out, qr/^c\\\\x01 /m, "usage --by $by: the text \\x01 as c\\\\x01");
    like($out, qr/^c\\x01 /m, "usage --by $by: the byte 0x01 as c\\x01");
    is(scalar(grep { $_ eq '\\x74otal' } @shown), 1,
       "usage --by $by: one row reads \\x74otal, the name total")
        or diag(explain \@shown);

    # --json: the names as they are, one to one by JSON's rules; still
    # nothing a terminal acts on written raw
    ($rc, $out) = run_ctl('usage', $path, '--by', $by, '--json');
    is($rc, 0, "usage --by $by --json: summarised");
    ok($out !~ /[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]
                |\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]/x,
       "usage --by $by --json: no control, C1 or bidi control raw");
    my $j = eval { JSON::PP->new->utf8->decode($out) } // {};
    is_deeply([sort map { $_->{key} } @{$j->{groups} // []}],
              [sort @names], "usage --by $by --json: the keys are the names");
}

# ---- a policy's text: a pattern, a key, a query parameter ---------------

sub policy {
    my ($pattern, $query, $extra) = @_;
    return <<"Y";
version: 1
clients:
  agent: { unix_uid: 1000$extra }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: one
    clients: [agent]
    match: { method: GET, path: "/one/{id}" }
    params: { id: $pattern }
    upstream: up
    to: "/one/{id}"
    query: { allow: [$query] }
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

# YAML single-quoted: the text \x01; double-quoted: the byte
my $text = write_file('text.yaml', policy(q{'^a\x01$'}, q{'q\x01'}, ''));
my $byte = write_file('byte.yaml', policy(q{"^a\x01$"}, q{"q\x01"}, ''));
my $none = write_file('none.yaml', policy(q{'^a$'}, 'q', ''));

my ($rc, $out) = run_ctl('explain', $text, '--client', 'agent', 'GET',
                         '/one/zz');
my ($rc2, $out2) = run_ctl('explain', $byte, '--client', 'agent', 'GET',
                           '/one/zz');
is_deeply([$rc, $rc2], [1, 1], 'explain: a param that does not match');
like($out, qr/^deny: param \(param "id" does not match \^a\\\\x01\$\)$/m,
     'explain: the pattern\'s backslash shown as \\\\');
like($out2, qr/^deny: param \(param "id" does not match \^a\\x01\$\)$/m,
     'explain: its byte 0x01 as \\x01');

# a request's parameter name, with a backslash in it (%5C)
($rc, $out) = run_ctl('explain', $none, '--client', 'agent', 'GET',
                      '/one/a?x%5Cx1b=1');
like($out, qr/^deny: query \(query parameter "x\\\\x1b" is not allowed\)$/m,
     'explain: a request\'s parameter name shown as no other');

# diff: the text replaced by the byte is a change that reads as one
($rc, $out) = run_ctl('diff', $text, $byte);
like($out, qr/^[-+~] .*q\\\\x01/m, 'diff: the old query name, q\\\\x01');
like($out, qr/^\+ .*q\\x01 allowed$/m, 'diff: the new, q\\x01');
ok(printable($out), 'diff: printable ASCII alone');

# check: a key the policy does not know, quoted in the error
($rc, $out) = run_ctl('check',
                      write_file('key.yaml', policy(q{'^a$'}, 'q',
                                                    q{, 'k\x01': 1})));
($rc2, $out2) = run_ctl('check',
                        write_file('key.yaml', policy(q{'^a$'}, 'q',
                                                      q{, "k\x01": 1})));
is_deeply([$rc, $rc2], [1, 1], 'check: an unknown key is invalid');
isnt($out, $out2, 'check: the text \\x01 and the byte are told apart')
    or diag($out);
