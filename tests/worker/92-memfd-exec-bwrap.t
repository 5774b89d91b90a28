#!/usr/bin/perl

# 92-memfd-exec.t with the bwrap backend, whose seccomp program the
# worker writes itself.

use strict;
use warnings;

use FindBin;

$ENV{AIRLOCK_WORKER_BACKEND} = 'bwrap';
do "$FindBin::Bin/92-memfd-exec.t" or die $@ || $!;
