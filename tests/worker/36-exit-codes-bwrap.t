#!/usr/bin/perl

# 36-exit-codes.t with the bwrap backend, where the sandbox's init
# reports the script's wait status.

use strict;
use warnings;

use FindBin;

$ENV{AIRLOCK_WORKER_BACKEND} = 'bwrap';
do "$FindBin::Bin/36-exit-codes.t" or die $@ || $!;
