#!/usr/bin/perl
# The module's dynamic symbols: only what nginx's load_module reads and
# the two module structures (modules/ngx_http_airlock_module.map).  The
# policy library linked into it and the module's own functions are
# local: no other module in the same nginx binds to them or replaces
# them, and none is called through the PLT or a GOT entry.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

need_cmd(qw(nm readelf));

my $build = $ENV{AIRLOCK_BUILD} // "$FindBin::Bin/../../build";
my $so = "$build/modules/ngx_http_airlock_module.so";
absent("module not built: $so") unless -f $so;

my @syms = map { (split ' ')[-1] } `nm -D --defined-only $so`;
is($?, 0, 'nm -D reads the module');

is_deeply([sort @syms],
          [sort qw(ngx_modules ngx_module_names ngx_module_order
                   ngx_http_airlock_module ngx_http_airlock_llm_module)],
          'the module exports what nginx loads, and nothing else')
    or diag(scalar(@syms) . ' symbols: '
            . join(' ', grep { defined } @syms[0 .. 19]));

# a function of the module or of libairlock.a reached through a
# relocation would be one that could be interposed
my @rel = grep { /\b(?:al_\w+|ngx_http_airlock_\w+)/
                 && !/\bngx_http_airlock_(?:llm_)?module\b/ }
          `readelf -W -r $so`;
is($?, 0, 'readelf -r reads the module');
is(scalar(@rel), 0, 'no relocation names a function of ours')
    or diag(join('', grep { defined } @rel[0 .. 9]));

# what is left to be bound at load time is from other libraries
my @undef = map { (split ' ')[-1] } `nm -D --undefined-only $so`;
is(scalar(grep { /^al_/ } @undef), 0, 'nothing of libairlock.a is undefined');

done_testing();
