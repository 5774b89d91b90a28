#!/usr/bin/perl

# A sandbox whose worker is stopped or killed, with the bwrap backend (the
# suite itself is unwatched.pl, shared by both backends).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

our $BACKEND = 'bwrap';
do "$FindBin::Bin/unwatched.pl" or die $@ || $!;
