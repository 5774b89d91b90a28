#!/usr/bin/perl

# ngx_http_airlock_llm_module: a provider that echoes its key in a form a
# client decodes trivially does not leak it through the gateway.  The
# provider here is the echo upstream, told by the location (from the query
# of the request) to answer with the key URL-encoded in mixed-case hex,
# JSON-escaped, in base64 without padding or base64url, or in hex (lower
# or upper case, a space or a ":" between bytes); in a body held
# whole, in one streamed in 3-byte pieces, and in one longer than the
# hold.  OpenAI-style ("Bearer k") and Anthropic-style (x-api-key) keys.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;
use Airlock::ScrubForms qw(url_all json_all b64 unpadded b64url);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $ok = $Airlock::LLM::OPENAI_KEY;
my $ak = $Airlock::LLM::ANTHROPIC_KEY;

srand(61);

my @forms = (
    [ openai => 'openai: url, every byte, mixed case', url_all($ok) ],
    [ openai => 'openai: "Bearer k" URL-encoded', 'Bearer%20' . url_all($ok) ],
    [ openai => 'openai: json, every char \uXXXX', json_all($ok) ],
    [ openai => 'openai: json, some chars',
      'sk\u002dtest\u002DOPENAI-0123456789abcdefXYZ' ],
    [ openai => 'openai: base64, no padding', unpadded(b64($ok)) ],
    [ openai => 'openai: base64url, no padding', unpadded(b64url($ok)) ],
    [ openai => 'openai: "Bearer k" in base64', b64("Bearer $ok") ],
    [ anthropic => 'anthropic: url, every byte', url_all($ak) ],
    [ anthropic => 'anthropic: json, every char', json_all($ak) ],
    [ anthropic => 'anthropic: base64url', b64url($ak) ],
    [ openai => 'openai: hex, spaced', hex_of($ok, ' ') ],
    [ openai => 'openai: hex, upper case', uc hex_of($ok, '') ],
    [ anthropic => 'anthropic: hex, colons', hex_of($ak, ':') ],
);

sub hex_of {
    my ($s, $sep) = @_;
    return join $sep, map { sprintf '%02x', ord } split //, $s;
}

# The gateway passes no X-Echo-* header of the client, nor a query: the
# location sets the echo upstream's headers from the User-Agent, which it
# passes ("f=i": form i as "<<form>>;", "size=n", ...).
my $map = '';
for my $i (0 .. $#forms) {
    (my $v = "<<$forms[$i][2]>>;") =~ s/\\/\\\\/g;
    $map .= "        \"~(^| )f=$i( |\$)\" \"$v\";\n";
}

my $ua = '';
for my $k (qw(size chunked piece delay)) {
    $ua .= <<"EOF";
    map \$http_user_agent \$echo_$k {
        default "";
        "~(^| )$k=(?<v>[0-9]+)" \$v;
    }
EOF
}

$l->{key} = $l->proxy->keygen;

(my $policy = $l->policy) =~ s/%%PORT_8081%%/%%PORT_8083%%/g;
$t->write_file_expand('policy.yaml', $policy);
$t->write_file_expand('nginx.conf', $l->conf(http => <<"EOF",
    map \$http_user_agent \$echo_pattern {
        default "";
$map    }
$ua
EOF
    location => <<'EOF'));
            proxy_set_header X-Echo-Pattern $echo_pattern;
            proxy_set_header X-Echo-Size $echo_size;
            proxy_set_header X-Echo-Chunked $echo_chunked;
            proxy_set_header X-Echo-Chunk-Size $echo_piece;
            proxy_set_header X-Echo-Delay-Ms $echo_delay;
            proxy_buffer_size 1k;
            proxy_buffers 8 1k;
            proxy_busy_buffers_size 2k;
EOF
$t->write_file('usage.log', '');

$t->start_echo(8083);
$t->run;

my $agent = $l->token('agent');

sub call {
    my ($kind, %q) = @_;
    my $q = join ' ', map { "$_=$q{$_}" } sort keys %q;
    my @h = ([ 'User-Agent' => $q ]);

    if ($kind eq 'openai') {
        return $l->request('POST', "/v1/proxy/openai/chat/completions",
                           token => $agent, headers => \@h, timeout => 20,
                           body => { model => 'gpt-4o-mini',
                                     messages => [ { role => 'user',
                                                     content => 'Hi' } ] });
    }

    return $l->request('POST', "/v1/proxy/anthropic/messages",
                       token => $agent, anthropic => 1, headers => \@h,
                       timeout => 20,
                       body => { model => 'claude-3-5-haiku',
                                 max_tokens => 100,
                                 messages => [ { role => 'user',
                                                 content => 'Hi' } ] });
}

for my $i (0 .. $#forms) {
    my ($kind, $name, $form) = @{$forms[$i]};
    my $unit = "<<$form>>;";
    my $want = '<<[REDACTED]>>;';

    my $n = int(8000 / length $unit);
    my $r = call($kind, f => $i, size => $n * length $unit);
    is($r->{status}, 200, "$name: held: 200");
    ok($r->{body} eq $want x $n
       && ($r->{headers}{'content-length'} // -1) == length $r->{body},
       "$name: held: every occurrence redacted, exact Content-Length")
        or diag(substr($r->{raw}, 0, 600));
    unlike($r->{raw}, qr/\Q$form\E/, "$name: held: not in the response");

    $r = call($kind, f => $i, size => 4 * length $unit, chunked => 1,
              piece => 3, delay => 1);
    ok($r->{body} eq $want x 4, "$name: streamed in 3-byte pieces")
        or diag(substr($r->{raw}, 0, 600));
    unlike($r->{raw}, qr/\Q$form\E/, "$name: pieces: not in the response");

    $n = int(70000 / length $unit) + 1;
    $r = call($kind, f => $i, size => $n * length $unit);
    ok(!defined $r->{headers}{'content-length'}
       && $r->{body} eq $want x $n,
       "$name: long body streamed, every occurrence redacted");
    unlike($r->{raw}, qr/\Q$form\E/, "$name: long body: not in the response");
}

my $logs = join '', map { $t->read_file($_) // '' }
                    qw(access.log usage.log deny.log error.log);
is(Airlock::LLM::leaks($logs), 0, 'no key in any log');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
