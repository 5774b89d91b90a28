package Airlock::H2;

# A raw HTTP/2 client of one stream (h2c, prior knowledge), for tests
# that need frames no HTTP/2 library lets one write: a HEADERS frame
# without END_STREAM and then an empty DATA frame, a body in pieces.
#
#   use Airlock::H2 qw(h2_frame h2_hpack h2_preface h2_stream);
#   my $r = h2_stream([ h2_preface()
#                       . h2_frame(1, 4, 1, h2_hpack([':method', 'GET'],
#                                                    ...))
#                       . h2_frame(0, 1, 1, '') ]);
#   $r->{status}, $r->{data}
#
# Stream 1 is the only one.  The answer's :status is read as nginx
# writes it: one of HPACK's static table (indexes 8 to 14: 200, 204,
# 206, 304, 400, 404, 500) as one byte, any other as index 8's name with
# the three digits raw (nginx codes no digits with Huffman).

use strict;
use warnings;

use Exporter qw(import);
use IO::Select;
use Time::HiRes qw(time);

use Airlock::Test ();

our @EXPORT_OK = qw(h2_frame h2_hpack h2_preface h2_stream);

# HPACK's static table's :status entries, as an indexed field's byte
my %STATIC = (0x88 => 200, 0x89 => 204, 0x8a => 206, 0x8b => 304,
              0x8c => 400, 0x8d => 404, 0x8e => 500);


# a frame: TYPE, FLAGS, stream ID, PAYLOAD
sub h2_frame {
    my ($type, $flags, $id, $payload) = @_;
    return pack('NCN', length($payload) << 8 | $type, $flags, $id)
           . $payload;
}


# header pairs in HPACK, each a literal without indexing and a new name
# (no table, no Huffman): names and values under 128 bytes
sub h2_hpack {
    return join '', map { "\x00" . chr(length $_->[0]) . $_->[0]
                          . chr(length $_->[1]) . $_->[1] } @_;
}


# the connection preface and an empty SETTINGS frame
sub h2_preface {
    return "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" . h2_frame(4, 0, 0, '');
}


# Writes PARTS (each a while after the one before, Airlock::Test::http's
# pieces) to port => N (8082), and reads stream 1's answer until its
# END_STREAM, RST_STREAM or a GOAWAY: the connection stays open, so the
# end is a frame, not a time.  wait => S gives up after S seconds (30).
# { status => its :status, data => its DATA bytes }.
sub h2_stream {
    my ($parts, %o) = @_;
    my $s = Airlock::Test::http($parts, port => $o{port} // 8082,
                                start => 1, timeout => 30);
    my $sel = $s && IO::Select->new($s);
    my $deadline = time + ($o{wait} // 30);
    my ($buf, $done) = ('', 0);
    my %res = (status => '', data => '');

    while ($s && !$done) {
        while (!$done && length $buf >= 9) {
            my ($lt, $flags, $id) = unpack('NCN', $buf);
            my ($len, $type) = ($lt >> 8, $lt & 0xff);
            last if length $buf < 9 + $len;
            my $payload = substr($buf, 9, $len);
            substr($buf, 0, 9 + $len) = '';
            $done = 1 if $type == 7;
            next unless $id == 1;
            $res{status} = $1
                if $type == 1 && $payload =~ /[\x08\x48]\x03(\d{3})/;
            $res{status} = $STATIC{ord $payload}
                if $type == 1 && length $payload
                   && exists $STATIC{ord $payload};
            $res{data} .= $payload if $type == 0;
            $done = 1 if (($type == 0 || $type == 1) && $flags & 1)
                         || $type == 3;
        }
        last if $done;
        my $left = $deadline - time;
        last if $left <= 0 || !$sel->can_read($left);
        sysread($s, $buf, 65536, length $buf) or last;
    }
    close $s if $s;

    return \%res;
}


1;
