package Airlock::ShippedApi;

# The appliance's own /api/ server before an agent under test: an
# AgentTest (tests/agent/lib, which the test puts in @INC) whose
# nginx.conf also has the 127.0.0.1:8080 server of the shipped
# appliance-image/root/etc/nginx/conf.d/airlock.conf and the limit zones
# it may use, its listen address, agent socket and htpasswd moved into
# the test: %%PORT_8090%%, the test dir's agent-a.sock and api.htpasswd
# (users alice and bob, passwords FAKE-alice-pw and FAKE-bob-pw).
#
#   my $a = Airlock::ShippedApi->new(before => [ 'lingering_time 600s;' ]);
#   my ($cap) = $a->server =~ /^\s*limit_conn\s+\S+\s+(\d+)\s*;/m;
#   $a->setup(agent => [ '--api-peer', 'root' ]);

use strict;
use warnings;

use Cwd ();
use File::Basename ();

use AgentTest;

our @ISA = ('AgentTest');

# the source tree's top
my $TOP = Cwd::abs_path(File::Basename::dirname(__FILE__) . '/../../..');


sub top { $TOP }


sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!\n";
    local $/;
    return <$fh> // '';
}


# before => [ directives ]: more lines of the http block, before the
# zones and the server
sub new {
    my ($class, %o) = @_;
    my $self = $class->SUPER::new;
    my $d = $self->t->testdir;
    my $ngx = slurp("$TOP/appliance-image/root/etc/nginx/conf.d/airlock.conf");

    my @zones = $ngx =~ /^\s*(limit_(?:conn|req)_zone\s[^;]*;)/mg;
    my ($server) = grep { /^\s*listen\s+127\.0\.0\.1:8080;/m }
                   $ngx =~ /^(server\s*(\{(?:[^{}]++|(?2))*\}))/mg;
    die "no 127.0.0.1:8080 server in the shipped airlock.conf\n"
        unless defined $server;

    my $api = $server;
    for my $sub ([ '127.0.0.1:8080', '127.0.0.1:%%PORT_8090%%' ],
                 [ '/run/airlock/agent/agent.sock', "$d/agent-a.sock" ],
                 [ '/etc/airlock/api.htpasswd', "$d/api.htpasswd" ])
    {
        $api =~ s/\Q$sub->[0]\E/$sub->[1]/g
            or die "the shipped /api/ server has no $sub->[0]\n";
    }

    $self->{shipped_server} = $server;
    $self->{shipped_extra} = join("\n", @{$o{before} // []}, @zones, $api);

    $self->t->write_file('api.htpasswd', "alice:{PLAIN}FAKE-alice-pw\n"
                                         . "bob:{PLAIN}FAKE-bob-pw\n");

    return $self;
}


# the shipped server block, as shipped
sub server { $_[0]{shipped_server} }


sub conf {
    my ($self) = @_;
    my $conf = $self->SUPER::conf();
    $conf =~ s/\}\s*\z/$self->{shipped_extra}\n}\n/
        or die "no http block's end\n";
    return $conf;
}


1;
