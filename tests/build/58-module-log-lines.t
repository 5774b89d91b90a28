#!/usr/bin/perl

# The modules write every error-log line of theirs at run time with
# ngx_http_airlock_log_error() (modules/ngx_http_airlock_log.c), which
# escapes the context nginx ends a request's line with (the request line,
# the Host, the Referer, as the client sent them): a line written with
# ngx_log_error() on a request's or a connection's log would put a
# client's terminal escapes in the operator's log as they came
# (tests/nginx/224-*.t, 233-*.t).  ngx_log_error() is left to the logs
# that have no request: the configuration's, the cycle's, a shared zone's
# at its creation.

use strict;
use warnings;

use FindBin;
use Test::More;

my $dir = "$FindBin::Bin/../../modules";
my @files = sort glob "$dir/*.c";

ok(@files > 0, 'the modules\' sources');

my %own = map { $_ => 1 } ('cf->log', 'cycle->log', 'ngx_cycle->log',
                           'shm_zone->shm.log', 'zone->shm.log');
my (@bad, $calls, $ours);

for my $f (@files) {
    open my $fh, '<', $f or die "$f: $!\n";
    my $src = do { local $/; <$fh> };
    close $fh;

    (my $name = $f) =~ s{.*/}{};

    # comments do not count
    $src =~ s{/\*.*?\*/}{ my $c = $&; $c =~ tr/\n//cd; $c }gse;

    while ($src =~ /\bngx_log_error\s*\(\s*[^,]+,\s*([^,]+?)\s*,/g) {
        my ($log, $at) = ($1, $-[0]);
        my $line = 1 + (substr($src, 0, $at) =~ tr/\n//);

        $calls++;

        # the one that writes the escaped copy of the line's log
        next if $name eq 'ngx_http_airlock_log.c' && $log eq '&shown.log';
        next if $own{$log};

        push @bad, "$name:$line: ngx_log_error(..., $log, ...)";
    }

    while ($src =~ /\bngx_log_error_core\s*\(/g) {
        my $line = 1 + (substr($src, 0, $-[0]) =~ tr/\n//);
        push @bad, "$name:$line: ngx_log_error_core()";
    }

    $ours++ while $src =~ /\bngx_http_airlock_log_error\s*\(/g;
}

ok($calls, 'ngx_log_error() calls found');
ok($ours, 'ngx_http_airlock_log_error() calls found');

is(scalar @bad, 0,
   'no line at run time is written around ngx_http_airlock_log_error()')
    or diag(join "\n", @bad);

done_testing();
