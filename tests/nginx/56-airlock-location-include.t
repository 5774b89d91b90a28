#!/usr/bin/perl

# Every nginx configuration the project ships (the example, the demo, the
# test harness) gives each Airlock location ("airlock on", "airlock_llm
# NAME") the same body, conf/airlock-location.conf, by include, so that a
# safety setting cannot be in one and missing in another.  (nginx -t
# refuses a location without the essentials: 50-airlock-location-checks.t.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;

my $top = "$FindBin::Bin/../..";

my %files = (
    'modules/nginx.conf.example' => qr{include /etc/airlock/airlock-location\.conf;},
    'conf/demo/nginx.conf.in' => qr{include \@TOP\@/conf/airlock-location\.conf;},
    'tests/lib/Airlock/Proxy.pm' => qr{%%AIRLOCK_LOCATION%%},
    'tests/lib/Airlock/LLM.pm' => qr{%%AIRLOCK_LOCATION%%},
);

plan tests => 2 * keys(%files) + 1;

for my $f (sort keys %files) {
    open(my $fh, '<', "$top/$f") or die "$f: $!";
    my $text = do { local $/; <$fh> };

    # a harness's location whose body the test gives (the location
    # checks: what nginx -t refuses) is not one the harness writes
    $text =~ s/\bairlock\s+on\s*;\s*# its body the caller's[^\n]*//g;
    $text =~ s/#[^\n]*//g;

    # the fallback's location (airlock_llm_fallback) is one too
    my $locations = () = $text =~ /\bairlock\s+on\s*;
                                    |\bairlock_llm\s+[^\s;]+\s*;
                                    |^\s*airlock_llm_fallback\s*;/mgx;
    my $includes = () = $text =~ /$files{$f}/g;

    ok($locations > 0, "$f: has Airlock locations");
    is($includes, $locations, "$f: each includes the location body");
}

open(my $fh, '<', "$top/conf/airlock-location.conf") or die $!;
my $body = do { local $/; <$fh> };
like($body, qr/^proxy_pass \$airlock_upstream\$airlock_uri;$/m,
     'the body forwards to $airlock_upstream$airlock_uri');
