#!/usr/bin/perl
# airlockctl and long_context prices: check reads them and refuses bad
# ones with FILE:LINE:COLUMN, explain shows them and reserves a request at
# the prices its prompt estimate falls under, diff reports their changes.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

if (!-x $ctl) {
    plan skip_all => "$ctl not built" unless $ENV{CI};
    fail("$ctl not built");
    done_testing();
    exit 1;
}

sub run {
    my (@args) = @_;
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    my $out = `$cmd 2>&1 </dev/null`;
    return ($? >> 8, $out);
}

my $policy = <<'Y';
version: 1
clients:
  cheap: { unix_uid: 1001 }
secrets:
  k: { file: /run/credentials/airlock/k }
llm:
  - name: oa
    prefix: /v1/proxy/oa
    provider: openai
    upstream: https://api.openai.com/v1
    secret: k
    models: [m1]
    prices:
      m1:
        input: 1
        output: 4
        long_context: { above_input_tokens: 1000, input: 2, output: 6 }
    clients:
      cheap:
        usd_per_day: 2.5
        default_max_tokens: 100
alerts:
  deny: { threshold: 3, window: 60s }
Y

my $p = write_file('policy.yaml', $policy);
my ($rc, $out) = run('check', $p);
is($rc, 0, 'long_context prices pass check') or diag($out);

(my $bad = $policy) =~ s/input: 2, output: 6/input: 2, output: 3/;
($rc, $out) = run('check', write_file('bad.yaml', $bad));
is($rc, 1, 'a long_context price below the model\'s own: invalid');
like($out, qr/^\Q$dir\E\/bad\.yaml:17:\d+: long_context: output is below the model's own output/m,
     'FILE:LINE:COLUMN, naming the price') or diag($out);

($bad = $policy) =~ s/above_input_tokens: 1000, //;
($rc, $out) = run('check', write_file('bad2.yaml', $bad));
like($out, qr/bad2\.yaml:17:\d+: long_context is missing the required key "above_input_tokens"/,
     'above_input_tokens is required') or diag($out);

my $chat = '/v1/proxy/oa/chat/completions';

# 400 bytes of prompt: an estimate of about 100 tokens, under 1000
my $short = write_file('short.json', '{"model":"m1","messages":'
                       . '[{"role":"user","content":"' . ('a' x 400)
                       . '"}]}');
# 8000 bytes: about 2000 tokens, above
my $long = write_file('long.json', '{"model":"m1","messages":'
                      . '[{"role":"user","content":"' . ('a' x 8000)
                      . '"}]}');

($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $chat,
                  '--body', $short, '--content-type', 'application/json');
is($rc, 0, 'explain: allowed');
like($out, qr/^  price:    above 1000 input tokens, for all tokens: \$2 input, \$2 cached input, \$6 output per million tokens$/m,
     'explain: the long_context prices') or diag($out);
like($out, qr/^  cost:     at the prices up to 1000 input tokens/m,
     'explain: a short prompt at the model\'s own prices') or diag($out);

($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $chat,
                  '--body', $long, '--content-type', 'application/json');
like($out, qr/^  cost:     at the prices above 1000 input tokens/m,
     'explain: a long prompt at the long_context prices') or diag($out);

my ($est) = $out =~ /the prompt estimate is (\d+)/;
my ($lneed) = $out =~ /reserves up to \$([0-9.]+)/;
ok(defined $est && defined $lneed
   && abs($lneed - ($est * 2 + 100 * 6) / 1e6) < 1e-12,
   'explain: the long prompt reserved at the long_context prices')
    or diag($out);

# diff

my $old = $p;
(my $text = $policy) =~ s/input: 2, output: 6/input: 3, output: 6/;
($rc, $out) = run('diff', $old, write_file('new.yaml', $text));
like($out, qr/^- llm oa: model m1 long_context input price 2 -> 3 USD per million tokens$/m,
     'diff: a long_context price raised') or diag($out);

($text = $policy) =~ s/above_input_tokens: 1000/above_input_tokens: 2000/;
($rc, $out) = run('diff', $old, write_file('new2.yaml', $text));
like($out, qr/^\+ llm oa: model m1 long_context above_input_tokens 1000 -> 2000$/m,
     'diff: the threshold raised grants') or diag($out);

($text = $policy) =~ s/\n        long_context: .*//;
($rc, $out) = run('diff', $old, write_file('new3.yaml', $text));
like($out, qr/^\+ llm oa: model m1 long_context prices \(above 1000 input tokens\) removed$/m,
     'diff: long_context removed') or diag($out);

done_testing();
