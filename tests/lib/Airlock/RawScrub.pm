package Airlock::RawScrub;

# The shared part of the tests of a path nginx opens to the client in a
# later version (tests/nginx/29-*.t): one route ("bearer", GET /{x},
# injecting "Bearer {tok}") before tests/lib/raw-upstream.pl, which sends
# the raw answer given, %AUTH% and %TOK% in it replaced by the injected
# value and the token.
#
#   my ($t, $tok) = raw_scrub(directive => 'proxy_pass_trailers on',
#                             since => '1.27.2', answer => $raw);
#
# On an nginx older than since, the directive must not exist: nginx -t
# refusing it is then the one test, and the script ends there.  Otherwise
# the upstream and nginx are running when it returns.

use strict;
use warnings;

use Exporter 'import';
use FindBin;
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

our @EXPORT_OK = qw(raw_scrub);

my $TOK = 's3cr3t-token-XYZ-0123456789';

sub raw_scrub {
    my (%o) = @_;
    my $t = Airlock::Test->new;
    my ($name) = $o{directive} =~ /^(\S+)/;

    my ($v) = (`@{[ $t->nginx_bin ]} -v 2>&1` // '')
        =~ m{nginx/(\d+\.\d+\.\d+)};
    my $have = sprintf '%03d%03d%03d', split /\./, $v // '0.0.0';
    my $want = sprintf '%03d%03d%03d', split /\./, $o{since};

    my $p = Airlock::Proxy->new($t);
    $p->keygen;
    my $sealed = $p->seal($TOK);

    $t->write_file_expand('policy.yaml', <<"END");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bearer
    clients: [local]
    match: { method: GET, path: "/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
END

    $t->write_file_expand('nginx.conf', $p->conf(
        location => "$o{directive};\n"
            . "            proxy_set_header X-Raw \""
            . encode_base64($o{answer}, '') . "\";"));

    if ($have lt $want) {
        my ($rc, $out) = $t->reload_test;
        plan tests => 1;
        ok($rc != 0 && $out =~ /unknown directive "\Q$name\E"/,
           "nginx $v refuses $name: the path it opens is not there")
            or diag($out);
        exit 0;
    }

    $t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
                   $t->port(8081));
    $t->wait_for_port(8081) or die 'raw upstream did not start';
    $t->run;

    return ($t, $TOK);
}

1;
