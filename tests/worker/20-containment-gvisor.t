#!/usr/bin/perl

# airlock-worker containment with the gvisor backend (the suite itself is
# containment.pl, shared by both backends).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

our $BACKEND = 'gvisor';
do "$FindBin::Bin/containment.pl" or die $@ || $!;
