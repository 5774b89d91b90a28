#!/usr/bin/perl

# 96-pids-exit.t with the bwrap backend, where a fork past the limit
# fails inside.

use strict;
use warnings;

use FindBin;

$ENV{AIRLOCK_WORKER_BACKEND} = 'bwrap';
do "$FindBin::Bin/96-pids-exit.t" or die $@ || $!;
