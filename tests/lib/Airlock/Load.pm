package Airlock::Load;

# Large generated policies, for the load benchmark (tests/bench/load.pl)
# and the load scaling test (tests/cli/load-scale.t).
#
#   my $l = Airlock::Load->new($dir);     # keypair and a file: secret
#   my $policy = $l->policy(10000);       # writes $dir/policy-10000.yaml
#   my $kb = $l->worker_rss($policy);     # one nginx worker's VmRSS, kB
#   my $ok = $l->nginx_t($policy);        # nginx -t, 1 when it passed
#
# Each route is "GET /sN/{id}" with a param pattern, its own upstream path
# and an injected credential (the same template on every route, as a
# policy that gives many routes one API key has), so a route costs what a
# real one does: trie nodes, a param, a to template, a rendered header and
# a scrub list.  One route is about 165 bytes of YAML, so 100,000 routes
# stay under the 16 MiB policy limit.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep);

my $TOP = abs_path(dirname(__FILE__) . '/../../..');


sub new {
    my ($class, $dir) = @_;
    my $build = $ENV{AIRLOCK_BUILD} // "$TOP/build";
    my $self = bless {
        dir    => $dir,
        build  => $build,
        ctl    => "$build/airlockctl",
        module => "$build/modules/ngx_http_airlock_module.so",
        nginx  => $ENV{AIRLOCK_NGINX} // _config_mk($build, 'NGINX_BIN')
                  // '/usr/sbin/nginx',
    }, $class;

    system("$self->{ctl} keygen $dir/key 2>/dev/null") == 0
        or die "airlockctl keygen failed\n";

    open my $fh, '>', "$dir/token" or die "$dir/token: $!\n";
    print $fh "bench-token-value\n";
    close $fh;
    chmod 0600, "$dir/token";

    return $self;
}


sub ctl { $_[0]{ctl} }
sub nginx { $_[0]{nginx} }
sub module { $_[0]{module} }


sub _config_mk {
    my ($build, $key) = @_;
    open my $fh, '<', "$build/config.mk" or return undef;
    while (<$fh>) {
        return $1 if /^\Q$key\E\s*=\s*(\S+)/;
    }
    return undef;
}


# writes a policy of $n routes; returns its path
sub policy {
    my ($self, $n) = @_;
    my $d = $self->{dir};
    my $path = "$d/policy-$n.yaml";

    open my $fh, '>', $path or die "$path: $!\n";
    print $fh <<"EOF";
version: 1
clients:
  agent: { cidr: 127.0.0.0/8 }
  worker: { unix_uid: 0 }
secrets:
  tok: { file: $d/token }
upstreams:
  up: { url: "http://127.0.0.1:9" }
routes:
EOF
    print $fh "- {name: r$_, clients: agent, match: {method: GET, "
            . "path: \"/s$_/{id}\"}, params: {id: '^[0-9]+\$'}, "
            . "upstream: up, to: \"/a/$_/{id}\", "
            . "inject: {X-Key: \"{tok}\"}}\n"
        for 1 .. $n;
    print $fh "alerts:\n  deny: { threshold: 3, window: 60s }\n";
    close $fh;

    return $path;
}


# $n routes /tN/x and $n routes /{p}/yN: {param} routes beside many literal
# siblings, the shape whose overlap check once cost their product
sub policy_siblings {
    my ($self, $n) = @_;
    my $path = "$self->{dir}/siblings-$n.yaml";

    open my $fh, '>', $path or die "$path: $!\n";
    print $fh "version: 1\nclients:\n  agent: { cidr: 127.0.0.0/8 }\n"
            . "upstreams:\n  up: { url: \"http://127.0.0.1:9\" }\n"
            . "routes:\n";
    print $fh "- {name: a$_, clients: agent, match: {method: GET, "
            . "path: \"/t$_/x\"}, upstream: up, to: /a}\n"
        for 1 .. $n;
    print $fh "- {name: b$_, clients: agent, match: {method: GET, "
            . "path: \"/{p}/y$_\"}, params: {p: '^[a-z]+\$'}, upstream: up, "
            . "to: /b}\n"
        for 1 .. $n;
    print $fh "alerts:\n  deny: { threshold: 3, window: 60s }\n";
    close $fh;

    return $path;
}


sub _conf {
    my ($self, $policy) = @_;
    my $d = $self->{dir};
    my $conf = "$d/nginx.conf";
    my $user = $> == 0 ? "user root;\n" : '';

    mkdir "$d/logs";
    open my $fh, '>', $conf or die "$conf: $!\n";
    print $fh <<"EOF";
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
$user
load_module $self->{module};
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $d/client_body_temp;
    proxy_temp_path $d/proxy_temp;
    fastcgi_temp_path $d/fastcgi_temp;
    uwsgi_temp_path $d/uwsgi_temp;
    scgi_temp_path $d/scgi_temp;
    airlock_policy $policy;
    airlock_keyring $d/key;
    server {
        listen unix:$d/nginx.sock;
        location / { airlock on; }
    }
}
EOF
    close $fh;

    return $conf;
}


# the argv of nginx -t for a policy
sub nginx_t_argv {
    my ($self, $policy) = @_;
    my $conf = $self->_conf($policy);
    return ($self->{nginx}, '-t', '-q', '-p', "$self->{dir}/",
            '-c', $conf, '-e', "$self->{dir}/error.log");
}


# starts nginx with the policy, returns its one worker's VmRSS in kB
sub worker_rss {
    my ($self, $policy) = @_;
    my $d = $self->{dir};
    my $conf = $self->_conf($policy);
    my ($worker, $rss);

    unlink "$d/nginx.sock";

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>>', "$d/error.log";
        exec $self->{nginx}, '-p', "$d/", '-c', $conf, '-e', "$d/error.log";
        exit 127;
    }

    # 100,000 routes take a few seconds to load; this is a safety net
    for (1 .. 1200) {
        last if waitpid($pid, WNOHANG) != 0;
        $worker = _child($pid);
        last if defined $worker && -S "$d/nginx.sock";
        sleep 0.1;
    }

    if (defined $worker) {
        # the worker has finished its init once it accepts
        sleep 0.5;
        if (open my $fh, '<', "/proc/$worker/status") {
            while (<$fh>) {
                $rss = $1 if /^VmRSS:\s+(\d+)/;
            }
        }
    }

    kill 'QUIT', $pid;
    waitpid($pid, 0);

    die "nginx did not start with $policy; see $d/error.log\n"
        unless defined $rss;

    return $rss;
}


sub _child {
    my ($ppid) = @_;
    opendir(my $dh, '/proc') or return undef;
    for my $p (grep { /^\d+$/ } readdir $dh) {
        open my $fh, '<', "/proc/$p/stat" or next;
        my $stat = <$fh> // next;
        return $p if $stat =~ /^\d+ \(.*\) \S+ (\d+)/s && $1 == $ppid;
    }
    return undef;
}


1;
