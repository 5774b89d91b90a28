#!/usr/bin/perl

# 72-noexec.t with the bwrap backend, where the worker mounts the
# writable places noexec itself.

use strict;
use warnings;

use FindBin;

$ENV{AIRLOCK_WORKER_BACKEND} = 'bwrap';
do "$FindBin::Bin/72-noexec.t" or die $@ || $!;
