#!/usr/bin/perl

# airlock-worker containment with the bwrap backend (the suite itself is
# containment.pl, shared by both backends).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

our $BACKEND = 'bwrap';
do "$FindBin::Bin/containment.pl" or die $@ || $!;
