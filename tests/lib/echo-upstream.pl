#!/usr/bin/perl

# Fixture upstream for the nginx tests.  Answers every request with 200 and
# a JSON description of exactly what it received, and appends the same JSON
# as one line to the --log file, so a test can tell what, and whether
# anything, reached the upstream.
#
#   echo-upstream.pl PORT [--log FILE]
#
# Listens on 127.0.0.1:PORT, one process per connection, HTTP/1.1
# keep-alive, request bodies by Content-Length or chunked.
#
# JSON fields: method, target (raw request target), path, query (null when
# absent), version, headers ([[name, value], ...] as received), body (text,
# or base64 with body_b64: true when not valid UTF-8), conn (connection
# number) and seq (request number on that connection).  Request line and
# headers are bytes, one code point each.  A request that cannot be parsed
# is answered 400 with {"error": ...}, logged too.
#
# Request headers that change the answer (they are echoed as well):
#   X-Echo-Status: NNN        answer with that status
#   X-Echo-Redirect: URL      302 (unless X-Echo-Status) with Location: URL
#   X-Echo-Header: Name: v    add "Name: v" to the response; repeatable
#   X-Echo-Size: N            N bytes of a repeating 64-byte pattern instead
#   X-Echo-Pattern: text      with X-Echo-Size, repeat text instead
#   X-Echo-Pattern-B64: b64   the same, text given in base64 (any bytes)
#   X-Echo-Body-B64: b64      answer these bytes (application/json)
#                             instead of the description
#   X-Echo-Truncate: N        send only the first N bytes of the body, then
#                             close (the Content-Length promised more)
#   X-Echo-Chunked: 1         send the body in X-Echo-Chunk-Size (7) pieces,
#                             chunked, or close-delimited to HTTP/1.0
#   X-Echo-Delay-Ms: N        sleep N ms between pieces, or before a plain
#                             answer
#   X-Echo-Gzip: 1            gzip the body (and send no Content-Encoding
#                             unless X-Echo-Header adds one)
#   X-Echo-Transfer-Encoding: v
#                             with X-Echo-Chunked, "Transfer-Encoding: v"
#                             instead of "chunked" (the framing stays
#                             chunked)
# A path starting /__reflect-headers also returns each request header as
# X-Echo-<Name>.

use strict;
use warnings;

use IO::Compress::Gzip qw(gzip $GzipError);
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use MIME::Base64 qw(decode_base64 encode_base64);
use POSIX ();
use Time::HiRes qw(sleep);

my $IDLE = 120;
my $MAX_HEADER = 1 << 20;
my $PATTERN = join '', 0 .. 9, 'a' .. 'z', 'A' .. 'Z', '-', '_';
my $JSON = JSON::PP->new->canonical->utf8;

my %REASON = (
    200 => 'OK', 201 => 'Created', 204 => 'No Content',
    301 => 'Moved Permanently', 302 => 'Found', 304 => 'Not Modified',
    400 => 'Bad Request', 401 => 'Unauthorized', 403 => 'Forbidden',
    404 => 'Not Found', 413 => 'Payload Too Large',
    429 => 'Too Many Requests', 500 => 'Internal Server Error',
    502 => 'Bad Gateway', 503 => 'Service Unavailable',
);

my ($port, $log);

while (@ARGV) {
    my $arg = shift @ARGV;

    if ($arg eq '--log') {
        $log = shift @ARGV;
    } elsif ($arg =~ /^\d+$/) {
        $port = $arg;
    } else {
        die "usage: $0 PORT [--log FILE]\n";
    }
}

die "usage: $0 PORT [--log FILE]\n" unless defined $port;

my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                   LocalPort => $port, Proto => 'tcp',
                                   Listen => 128, ReuseAddr => 1)
    or die "listen 127.0.0.1:$port: $!\n";

$SIG{CHLD} = 'IGNORE';
$SIG{PIPE} = 'IGNORE';

my $conn = 0;

for (;;) {
    my $c = $listen->accept or next;
    $conn++;

    my $pid = fork;

    if (!defined $pid) {
        close $c;
        next;
    }

    if ($pid == 0) {
        close $listen;
        serve($c, $conn);
        POSIX::_exit(0);
    }

    close $c;
}


sub serve {
    my ($c, $conn_no) = @_;
    my $buf = '';

    for (my $seq = 1; ; $seq++) {
        my $req = read_request($c, \$buf) or return;

        $req->{conn} = $conn_no;
        $req->{seq} = $seq;
        log_line($req);

        if ($req->{error}) {
            my $body = $JSON->encode($req) . "\n";
            write_all($c, "HTTP/1.1 400 Bad Request\r\n"
                          . "Content-Type: application/json\r\n"
                          . "Content-Length: " . length($body) . "\r\n"
                          . "Connection: close\r\n\r\n" . $body);
            return;
        }

        respond($c, $req) or return;
    }
}


# A hash describing the request, { error => ... } if it is malformed, or
# undef when the peer went away or idled out.
sub read_request {
    my ($c, $buf) = @_;

    $$buf =~ s/\A(?:\r?\n)+//;

    until ($$buf =~ /\r?\n\r?\n/) {
        return { error => 'header too large' } if length $$buf > $MAX_HEADER;
        fill($c, $buf) or return undef;
        $$buf =~ s/\A(?:\r?\n)+//;
    }

    # match variables do not outlive the loop condition
    $$buf =~ /\r?\n\r?\n/;
    my $head = substr($$buf, 0, $-[0]);
    substr($$buf, 0, $+[0], '');

    my ($line, @lines) = split /\r?\n/, $head;

    $line =~ m{^(\S+) (\S+)(?: (\S+))?$}
        or return { error => 'bad request line', line => $line };

    my %r = (method => $1, target => $2, version => $3 // 'HTTP/0.9');
    my @h;

    for (@lines) {
        /^([^:\s]+):[ \t]*(.*?)[ \t]*$/
            or return { error => 'bad header line', line => $_ };
        push @h, [$1, $2];
    }

    $r{headers} = \@h;

    # Absolute-form targets carry the path after the authority.
    my $p = $r{target} =~ m{^[A-Za-z][A-Za-z0-9+.-]*://[^/?]*(.*)$}s
          ? $1 : $r{target};
    @r{qw(path query)} = split /\?/, $p, 2;
    $r{path} //= '';

    my $te = header(\%r, 'transfer-encoding');
    my $cl = header(\%r, 'content-length');
    my $body;

    if (defined $te && $te =~ /chunked/i) {
        $body = read_chunked($c, $buf);
        return { error => 'bad chunked body' } unless defined $body;

    } elsif (defined $cl) {
        return { error => 'bad content-length' } unless $cl =~ /^\d+$/;
        $body = read_n($c, $buf, $cl);
        return undef unless defined $body;

    } else {
        $body = '';
    }

    my $text = $body;
    if (utf8::decode($text)) {
        $r{body} = $text;
    } else {
        $r{body} = encode_base64($body, '');
        $r{body_b64} = JSON::PP::true;
    }

    return \%r;
}


sub fill {
    my ($c, $buf) = @_;

    return 0 unless IO::Select->new($c)->can_read($IDLE);
    return sysread($c, $$buf, 65536, length $$buf);
}


sub read_n {
    my ($c, $buf, $n) = @_;

    while (length $$buf < $n) {
        fill($c, $buf) or return undef;
    }

    return substr($$buf, 0, $n, '');
}


sub read_line {
    my ($c, $buf) = @_;

    until ($$buf =~ /\r?\n/) {
        return undef if length $$buf > $MAX_HEADER;
        fill($c, $buf) or return undef;
    }

    $$buf =~ /\r?\n/;
    my $line = substr($$buf, 0, $-[0]);
    substr($$buf, 0, $+[0], '');

    return $line;
}


sub read_chunked {
    my ($c, $buf) = @_;
    my $body = '';

    for (;;) {
        my $line = read_line($c, $buf) // return undef;
        $line =~ /^([0-9a-fA-F]+)/ or return undef;
        my $size = hex $1;

        if ($size == 0) {
            for (;;) {
                my $trailer = read_line($c, $buf) // return undef;
                return $body if $trailer eq '';
            }
        }

        my $data = read_n($c, $buf, $size + 2) // return undef;
        $body .= substr($data, 0, $size);
    }
}


sub header {
    my ($r, $name) = @_;
    my @v = headers($r, $name);
    return @v ? join(', ', @v) : undef;
}


sub headers {
    my ($r, $name) = @_;
    return map { $_->[1] } grep { lc $_->[0] eq $name } @{$r->{headers}};
}


# Returns true when the connection stays open for another request.
sub respond {
    my ($c, $r) = @_;
    my $status = 200;
    my @h;

    if (my $loc = header($r, 'x-echo-redirect')) {
        $status = 302;
        push @h, ['Location', $loc];
    }

    my $s = header($r, 'x-echo-status');
    $status = $s if defined $s && $s =~ /^\d{3}$/;

    for (headers($r, 'x-echo-header')) {
        push @h, [$1, $2] if /^([^:\s]+):[ \t]*(.*)$/;
    }

    if ($r->{path} =~ m{^/__reflect-headers}) {
        push @h, map { ["X-Echo-$_->[0]", $_->[1]] } @{$r->{headers}};
    }

    my ($size, $body);
    my $n = header($r, 'x-echo-size');

    if (defined $n && $n =~ /^\d+$/) {
        $size = $n;
        unshift @h, ['Content-Type', 'application/octet-stream'];
    } elsif (defined(my $b = header($r, 'x-echo-body-b64'))) {
        $body = decode_base64($b);
        $size = length $body;
        unshift @h, ['Content-Type', 'application/json'];
    } else {
        $body = $JSON->encode($r) . "\n";
        $size = length $body;
        unshift @h, ['Content-Type', 'application/json'];
    }

    my $unit = header($r, 'x-echo-pattern') // '';
    $unit = decode_base64(header($r, 'x-echo-pattern-b64') // '')
        if $unit eq '';
    $unit = $PATTERN if $unit eq '';

    if ((header($r, 'x-echo-gzip') // '') eq '1') {
        my $plain = $body // substr($unit x (int($size / length $unit) + 1),
                                    0, $size);
        gzip(\$plain => \$body) or die "gzip: $GzipError";
        $size = length $body;
    }

    my $piece = sub {
        my ($off, $len) = @_;
        return substr($body, $off, $len) if defined $body;
        my $reps = int($len / length $unit) + 2;
        return substr($unit x $reps, $off % length $unit, $len);
    };

    my $keep = keep_alive($r);
    my $no_body = $r->{method} eq 'HEAD' || $status =~ /^(?:1..|204|304)$/;
    my $delay = (header($r, 'x-echo-delay-ms') // 0) / 1000;
    my $pieces = !$no_body && (header($r, 'x-echo-chunked') // '') eq '1';
    my $chunk = header($r, 'x-echo-chunk-size') // '';
    $chunk = 7 unless $chunk =~ /^[1-9]\d*$/;
    my $chunked = $pieces && $r->{version} eq 'HTTP/1.1';

    if ($chunked) {
        push @h, ['Transfer-Encoding',
                  header($r, 'x-echo-transfer-encoding') // 'chunked'];
    } elsif ($pieces) {
        $keep = 0;
    } else {
        push @h, ['Content-Length', $size];
    }

    push @h, ['Connection', $keep ? 'keep-alive' : 'close'];

    sleep $delay if $delay && !$pieces;

    my $head = "HTTP/1.1 $status " . ($REASON{$status} // 'Status') . "\r\n"
             . join('', map { "$_->[0]: $_->[1]\r\n" } @h) . "\r\n";

    write_all($c, $head) or return 0;
    return $keep if $no_body;

    if (!$pieces) {
        my $cut = header($r, 'x-echo-truncate') // '';
        my $end = $cut =~ /^\d+$/ && $cut < $size ? $cut : $size;
        for (my $off = 0; $off < $end; $off += 65536) {
            my $len = $end - $off < 65536 ? $end - $off : 65536;
            write_all($c, $piece->($off, $len)) or return 0;
        }
        return $end == $size ? $keep : 0;
    }

    for (my $off = 0; $off < $size; $off += $chunk) {
        sleep $delay if $delay && $off;
        my $len = $size - $off < $chunk ? $size - $off : $chunk;
        my $data = $piece->($off, $len);
        $data = sprintf("%x\r\n%s\r\n", $len, $data) if $chunked;
        write_all($c, $data) or return 0;
    }

    write_all($c, "0\r\n\r\n") or return 0 if $chunked;

    return $keep;
}


sub keep_alive {
    my ($r) = @_;
    my $conn = lc(header($r, 'connection') // '');

    return $conn =~ /\bkeep-alive\b/ if $r->{version} eq 'HTTP/1.0';
    return $r->{version} eq 'HTTP/1.1' && $conn !~ /\bclose\b/;
}


sub write_all {
    my ($c, $data) = @_;
    my $off = 0;

    while ($off < length $data) {
        my $n = syswrite($c, $data, length($data) - $off, $off);
        return 0 unless $n;
        $off += $n;
    }

    return 1;
}


# One write per line, O_APPEND: lines from concurrent connections stay whole.
sub log_line {
    my ($r) = @_;

    return unless defined $log;

    open(my $fh, '>>:raw', $log) or die "open $log: $!\n";
    syswrite($fh, $JSON->encode($r) . "\n");
    close $fh;
}
