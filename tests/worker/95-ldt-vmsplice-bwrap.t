#!/usr/bin/perl

# 95-ldt-vmsplice.t with the bwrap backend, whose seccomp program the
# worker writes itself.

use strict;
use warnings;

use FindBin;

$ENV{AIRLOCK_WORKER_BACKEND} = 'bwrap';
do "$FindBin::Bin/95-ldt-vmsplice.t" or die $@ || $!;
