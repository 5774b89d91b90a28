package AlertdTest;

# Helpers for the airlock-alertd tests: a temporary directory with a
# keyring, secrets and a policy; the webhook receiver fixture
# (tests/lib/webhook-receiver.py); airlock-alertd itself; journal lines
# written the way the nginx module writes them (one JSON object per line,
# appended).  No nginx is involved.
#
#   my $t = AlertdTest->new;             # skips unless alertd is built
#   my $r = $t->receiver(secret => $t->secret('hook', 'whsec_...'));
#   $t->policy({ webhook => $r->{url}, secret => 'hook' });
#   $t->alertd;                          # --foreground, its log in alertd.log
#   my $id = $t->alert(client => 'agent');
#   ok($t->wait_for(sub { $t->delivered($r, $id) }));
#
# No test measures how long anything takes: the machine is shared and CI
# runs the suite under load.  A wait for what must happen has a generous
# timeout ($AlertdTest::WAIT, 30 s, unless a call gives more), which only
# keeps a broken alertd from hanging the test; where a test shows that
# something happened "at once", it takes away every other cause (an hour
# of --poll-interval and --repeat-interval) rather than timing it.  What
# must NOT happen is checked after evidence that alertd got that far: a
# later alert delivered after it, a round of its loop since (settle), its
# queue drained (drained), a save on disk, a log line.  A test sleeps
# only where time itself has to pass (a group window); where alertd logs
# that the time is over (a rotated file's grace; with -v, a group
# window that ended empty), it waits for that line instead, and where time must not run out (a grace, an attempt),
# the setting is an hour.
#
# Environment: AIRLOCK_BUILD (default <top>/build), AIRLOCK_KEEP=1 keeps
# the directory.

use strict;
use warnings;

use Cwd qw(abs_path);
use Exporter qw(import);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use IO::Handle;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(WNOHANG);
use Test::More ();

use lib dirname(__FILE__) . "/../../lib";
use Airlock::Port ();
use Airlock::Prereq ();
use Time::HiRes qw(sleep time);

our @EXPORT_OK = qw(uniq);

our $WAIT = 30;

my $TOP = abs_path(dirname(__FILE__) . '/../../..');
my $JSON = JSON::PP->new->canonical->utf8;
my @LIVE;


sub new {
    my ($class) = @_;
    my $build = $ENV{AIRLOCK_BUILD} // "$TOP/build";
    my $keep = $ENV{AIRLOCK_KEEP};

    for my $bin ("$build/airlock-alertd", "$build/airlockctl") {
        Airlock::Prereq::absent("$bin not built") unless -x $bin;
    }

    my $dir = tempdir('alertd-test-XXXXXX', TMPDIR => 1,
                      CLEANUP => !$keep);
    Test::More::diag("AIRLOCK_KEEP: test directory is $dir") if $keep;

    my $self = bless {
        dir     => $dir,
        top     => $TOP,
        build   => $build,
        bin     => "$build/airlock-alertd",
        ctl     => "$build/airlockctl",
        journal => "$dir/journal/airlock.journal",
        state   => "$dir/state",
        keyring => "$dir/keyring",
        pids    => {},
        n       => 0,
        seq     => 0,
        owner   => $$,
    }, $class;

    mkdir "$dir/journal" or die "mkdir: $!";

    my $out = `\Q$self->{ctl}\E keygen \Q$self->{keyring}\E 2>&1`;
    die "airlockctl keygen failed: $out" if $?;

    push @LIVE, $self;

    return $self;
}


sub dir { $_[0]{dir} }
sub journal { $_[0]{journal} }
sub state { $_[0]{state} }
sub keyring { $_[0]{keyring} }
sub bin { $_[0]{bin} }


sub write_file {
    my ($self, $name, $content) = @_;
    my $path = $name =~ m{^/} ? $name : "$self->{dir}/$name";

    open(my $fh, '>:raw', "$path.tmp") or die "write $path: $!";
    print $fh $content;
    close $fh or die "write $path: $!";
    rename "$path.tmp", $path or die "rename $path: $!";

    return $path;
}


sub read_file {
    my ($self, $name) = @_;
    my $path = $name =~ m{^/} ? $name : "$self->{dir}/$name";

    open(my $fh, '<:raw', $path) or return '';
    local $/;
    my $s = <$fh>;

    return $s // '';
}


# a secret file named NAME holding VALUE; the policy calls it NAME
sub secret {
    my ($self, $name, $value) = @_;
    $self->{secrets}{$name} = $self->write_file("$name.secret", $value);
    # file: secrets must be reachable by their owner only
    chmod 0600, $self->{secrets}{$name} or die "chmod: $!";
    return $self->{secrets}{$name};
}


# sinks: { webhook => URL, secret => NAME [, secret_also => NAME] } or
# { alertmanager => URL }
sub policy {
    my ($self, @sinks) = @_;
    my $y = "version: 1\n"
          . "clients:\n"
          . "  agent: { cidr: 127.0.0.1/32 }\n";

    if (%{$self->{secrets} // {}}) {
        $y .= "secrets:\n";
        for my $name (sort keys %{$self->{secrets}}) {
            $y .= "  $name: { file: \"$self->{secrets}{$name}\" }\n";
        }
    }

    $y .= "alerts:\n"
        . "  deny: { threshold: 3, window: 60s }\n"
        . "  quarantine: { threshold: 20, window: 60s, for: 10m }\n";

    if (@sinks) {
        $y .= "  sinks:\n";
        for my $s (@sinks) {
            if ($s->{webhook}) {
                $y .= "    - webhook: { url: \"$s->{webhook}\", "
                    . "hmac_secret: $s->{secret}"
                    . ($s->{secret_also}
                       ? ", hmac_secret_also: $s->{secret_also}" : '')
                    . " }\n";
            } else {
                $y .= "    - alertmanager: { url: \"$s->{alertmanager}\" }\n";
            }
        }
    }

    return $self->write_file('policy.yaml', $y);
}


sub free_port {
    return Airlock::Port::free_port();
}


sub spawn {
    my ($self, $name, @cmd) = @_;
    my $log = "$self->{dir}/$name.log";

    STDOUT->flush;
    STDERR->flush;

    my $pid = fork // die "fork: $!";

    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>>', $log) or POSIX::_exit(127);
        open(STDERR, '>&', \*STDOUT);
        exec { $cmd[0] } @cmd or print STDERR "exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }

    $self->{pids}{$pid} = $name;

    return $pid;
}


# waits for pid; returns its wait status, or undef when it did not end
sub reap {
    my ($self, $pid, $timeout) = @_;
    my $deadline = time + ($timeout // $WAIT);

    for (;;) {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid) {
            delete $self->{pids}{$pid};
            return $?;
        }
        if ($r == -1) {
            delete $self->{pids}{$pid};
            return undef;
        }
        return undef if time > $deadline;
        sleep 0.02;
    }
}


sub stop {
    my ($self, $pid, $sig, $timeout) = @_;

    kill $sig // 'TERM', $pid;
    my $st = $self->reap($pid, $timeout // $WAIT);

    unless (defined $st) {
        kill 'KILL', $pid;
        $self->reap($pid, 5);
    }

    return $st;
}


# options: secret (a path), fail, fail_until, fail_mode, delay, port,
# retry_after (a failing answer's Retry-After), no_end (that many 200
# answers whose body never ends), refuse (a regex: a body that matches
# it is refused with 422, every time), fail_match (a regex: a body that
# matches it fails as fail_mode says, every time), refuse_unverified (a
# request whose signatures do not verify under the secret is refused: 401),
# redirect (a URL: every request answered 307 to it), tls_cert and tls_key
# (PEM files: served over HTTPS, the url https://)
sub receiver {
    my ($self, %opt) = @_;
    my $n = ++$self->{n};
    my $log = "$self->{dir}/receiver-$n.jsonl";
    my $port_file = "$self->{dir}/receiver-$n.port";

    $self->write_file($log, '');

    my @cmd = ('python3', "$TOP/tests/lib/webhook-receiver.py",
               '--port', $opt{port} // 0, '--port-file', $port_file,
               '--secret-file', $opt{secret}, '--log', $log);
    push @cmd, '--fail', $opt{fail} if $opt{fail};
    push @cmd, '--fail-until', $opt{fail_until} if $opt{fail_until};
    push @cmd, '--fail-mode', $opt{fail_mode} if $opt{fail_mode};
    push @cmd, '--delay', $opt{delay} if $opt{delay};
    push @cmd, '--no-end', $opt{no_end} if $opt{no_end};
    push @cmd, '--retry-after', $opt{retry_after}
        if defined $opt{retry_after};
    push @cmd, '--refuse', $opt{refuse} if defined $opt{refuse};
    push @cmd, '--fail-match', $opt{fail_match}
        if defined $opt{fail_match};
    push @cmd, '--refuse-unverified' if $opt{refuse_unverified};
    push @cmd, '--redirect', $opt{redirect} if defined $opt{redirect};
    push @cmd, '--tls-cert', $opt{tls_cert}, '--tls-key', $opt{tls_key}
        if $opt{tls_cert};

    my $pid = $self->spawn("receiver-$n", @cmd);

    $self->wait_for(sub { -s $port_file })
        or die "webhook receiver did not start:\n"
               . $self->read_file("receiver-$n.log");

    my $port = $self->read_file($port_file);
    chomp $port;

    my $url = ($opt{tls_cert} ? 'https' : 'http') . "://127.0.0.1:$port/hook";

    return {
        pid   => $pid,
        port  => $port,
        log   => $log,
        url   => $url,
        label => label($url),
        name  => "receiver-$n",
    };
}


# a sink's URL as alertd logs it (ad_url_label()): no userinfo, and the
# path, query and fragment as "/...#" and a 24-bit FNV-1a of them (no
# space: a label is one word of a log line)
sub label {
    my ($url) = @_;
    my ($scheme, $auth, $rest) = $url =~ m{^([a-z]+://)?([^/?#]*)(.*)$}s;
    $scheme //= '';
    $auth =~ s/^.*@//s;
    return "$scheme$auth$rest" if $rest eq '' || $rest eq '/';
    my $h = 2166136261;
    $h = (($h ^ ord($_)) * 16777619) % 4294967296 for split //, $rest;
    return sprintf('%s%s/...#%06x', $scheme, $auth, $h & 0xffffff);
}


# the receiver's records, oldest first: the complete lines (a line the
# receiver is writing may be read in part, its first pages only, while
# alertd still sends)
sub records {
    my ($self, $r) = @_;
    my $text = $self->read_file($r->{log});
    my @rec;

    $text =~ s/[^\n]+\z//;
    for my $line (split /\n/, $text) {
        next unless length $line;
        push @rec, $JSON->decode($line);
    }

    return @rec;
}


# records answered 2xx and verified
sub accepted {
    my ($self, $r) = @_;
    return grep { $_->{verified} && $_->{status} =~ /^2\d\d$/ }
           $self->records($r);
}


sub delivered {
    my ($self, $r, @ids) = @_;
    my %got = map { $_->{id} => 1 } $self->accepted($r);
    return !grep { !$got{$_} } @ids;
}


sub alertd {
    my ($self, @args) = @_;
    my @cmd = ($self->{bin}, '--policy', "$self->{dir}/policy.yaml",
               '--keyring', $self->{keyring}, '--journal', $self->{journal},
               '--state', $self->{state}, '--foreground', @args);

    # "started" is logged once the journal is watched: wait for it
    my $before = () = $self->alertd_log =~ /\binfo: started /g;

    $self->{alertd} = $self->spawn('alertd', @cmd);

    $self->wait_for(sub {
        my $n = () = $self->alertd_log =~ /\binfo: started /g;
        $n > $before;
    }) or Test::More::diag("alertd did not start:\n" . $self->alertd_log);

    return $self->{alertd};
}


sub alertd_pid { $_[0]{alertd} }
sub alertd_log { $_[0]->read_file('alertd.log') }


# waits (up to timeout seconds, default $WAIT) for alertd's log to match re
sub log_has {
    my ($self, $re, $timeout) = @_;
    return $self->wait_for(sub { $self->alertd_log =~ $re }, $timeout);
}


# how many lines of alertd's log match re
sub log_count {
    my ($self, $re) = @_;
    my $n = () = $self->alertd_log =~ /^.*$re.*$/mg;
    return $n;
}


# waits for one more line matching re than there are now, after code
sub log_more {
    my ($self, $re, $code) = @_;
    my $before = $self->log_count($re);
    $code->();
    return $self->wait_for(sub { $self->log_count($re) > $before });
}


# Returns once alertd has been round its loop since what the test did
# before the call (a journal write, a signal): it reads the journal on
# every round, after the signals of that round.  SIGUSR1 is logged when
# a round takes it; SIGUSR2, sent once that line is there, is taken by a
# later round, so the round that took SIGUSR1 has read the journal by
# the time SIGUSR2's line is written.  (Were SIGUSR2 to arrive while the
# round that takes SIGUSR1 still reads signals, between SIGUSR1's line
# and its next read of the signal fd, a check of what must not happen
# would pass without alertd having looked; it could not fail for it.)
sub settle {
    my ($self) = @_;
    my $pid = $self->{alertd};

    for my $sig ('USR1', 'USR2') {
        $self->log_more(qr/\binfo: SIG$sig: nothing to do/,
                        sub { kill $sig, $pid })
            or return 0;
    }

    return 1;
}


# the deliveries alertd logged to a URL
sub logged_deliveries {
    my ($self, $url) = @_;
    my $u = quotemeta label($url);
    return $self->log_count(qr/\bdelivered alert \S+ to \w+ $u /);
}


# Waits until nothing is queued (for any sink) and every delivery alertd
# logged is in the receivers' records.  Of a delivery, the receiver
# writes its record after it answers and alertd removes the outbox file
# when it has the answer: either may come first.  Receivers may share a
# URL (one stopped, another on its port); a receiver may have records
# alertd did not log (it was killed before it could).
sub drained {
    my ($self, @r) = @_;
    my %url = map { $_->{url} => 1 } @r;

    return $self->wait_for(sub {
        return 0 if $self->outbox;
        my $logged = 0;
        $logged += $self->logged_deliveries($_) for keys %url;
        my $got = 0;
        $got += scalar($self->accepted($_)) for @r;
        return $got >= $logged;
    });
}


# With -v, whether an attempt to the sink at url is in flight: alertd has
# logged that it sends one and not yet how it ended
sub in_flight {
    my ($self, $url) = @_;
    my $u = quotemeta label($url);
    my $sent = $self->log_count(qr/\bdebug: sending alert \S+ to \w+ $u \(/);
    my $ended = $self->log_count(qr/\bdelivered alert \S+ to \w+ $u /)
              + $self->log_count(qr/\w+ $u: alert \S+ not delivered: /)
              + $self->log_count(qr/\w+ $u refused alert /);
    return $sent > $ended;
}


# runs alertd to completion: (exit status, its stderr)
sub run_alertd {
    my ($self, @args) = @_;
    my $out = "$self->{dir}/run.err";

    STDOUT->flush;
    STDERR->flush;

    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', $out) or POSIX::_exit(127);
        exec { $self->{bin} } $self->{bin}, @args or POSIX::_exit(127);
    }

    my $st = $self->reap($pid, 2 * $WAIT);
    return (defined $st ? $st >> 8 : -1, $self->read_file($out));
}


# an alert line; returns its id.  Fields default to a deny_threshold
# alert for client agent, reason no_route, now.
sub alert_line {
    my ($self, %f) = @_;
    my %a = (
        type     => 'alert',
        id       => $self->new_id,
        time     => now_rfc3339(),
        kind     => 'deny_threshold',
        severity => 'warning',
        client   => 'agent',
        reason   => 'no_route',
        route    => undef,
        count    => 5,
        window   => 60,
        sample   => 'GET /x',
        %f,
    );

    return ($a{id}, $JSON->encode(\%a) . "\n");
}


sub alert {
    my ($self, %f) = @_;
    my ($id, $line) = $self->alert_line(%f);
    $self->append($line);
    return $id;
}


sub deny_line {
    my ($self) = @_;
    return $JSON->encode({
        type => 'deny', time => now_rfc3339(),
        request_id => $self->new_id, client => 'agent', method => 'GET',
        path => '/x', route => undef, reason => 'no_route',
        detail => 'no route matches GET /x',
    }) . "\n";
}


sub append {
    my ($self, $text, $path) = @_;
    open(my $fh, '>>:raw', $path // $self->{journal}) or die "append: $!";
    print $fh $text;
    close $fh;
}


sub new_id {
    my ($self) = @_;
    $self->{seq}++;
    return sprintf('%08x%08x%08x%08x', $$, $self->{seq},
                   int(rand(2**32)), int(time * 1000) & 0xffffffff);
}


sub now_rfc3339 {
    my ($t) = @_;
    $t //= time;
    my @g = gmtime(int $t);
    return sprintf('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', $g[5] + 1900,
                   $g[4] + 1, @g[3, 2, 1, 0], int(($t - int $t) * 1000));
}


# waits for cond, up to timeout seconds (default $WAIT); returns whether
# it came
sub wait_for {
    my ($self, $cond, $timeout) = @_;
    my $deadline = time + ($timeout // $WAIT);

    for (;;) {
        return 1 if $cond->();
        return 0 if time > $deadline;
        sleep 0.05;
    }
}


# the queued files: not the ".tmp-NAME" alertd writes (and fsyncs) before
# it renames it into place, whose name also ends in ".json"
sub outbox {
    my ($self) = @_;
    opendir(my $d, "$self->{state}/outbox") or return ();
    my @f = sort grep { /\.json$/ && !/^\./ } readdir $d;
    return @f;
}


# the state alertd would load from STATE: the snapshot "offset" with the
# lines of "offset.log" of its generation applied (groups closed, then
# groups changed; the last line's position), as one hash
sub saved_state {
    my ($self) = @_;
    my $state = $JSON->decode($self->read_file("$self->{state}/offset"));
    my $key = sub {
        my ($a) = @_;
        return join "\0", $a->{kind}, $a->{client} // '',
               defined $a->{client} ? '' : $a->{peer} // '', $a->{reason};
    };
    my %g = map { $key->($_->{last}) => $_ } @{$state->{groups}};

    for my $line (split /\n/, $self->read_file("$self->{state}/offset.log")) {
        my $o = eval { $JSON->decode($line) } or last;
        next unless ($o->{gen} // -1) == ($state->{gen} // 0);
        delete $g{$key->($_)} for @{$o->{closed} // []};
        $g{$key->($_->{last})} = $_ for @{$o->{groups}};
        $state = { %$o, gen => $state->{gen} };
        delete $state->{closed};
    }

    $state->{groups} = [map { $g{$_} } sort keys %g];

    return $state;
}


# writes a state as alertd (or an older one) leaves it after a stop:
# all in "offset", the change log empty
sub write_state {
    my ($self, $state) = @_;
    $self->write_file("$self->{state}/offset", $JSON->encode($state));
    $self->write_file("$self->{state}/offset.log", '');
}


# alertd with more in its environment: alertd_env({ NAME => VALUE }, @args)
sub alertd_env {
    my ($self, $env, @args) = @_;
    local @ENV{keys %$env} = values %$env;
    return $self->alertd(@args);
}


# The fault injector (lib/fault.c), built into the test's directory:
# returns the environment in which alertd's call (write, fsync,
# ftruncate, pread; open, which is open() and openat(); stat) on a file
# whose path ends with suffix fails with errno while fault_on() holds;
# fault_made() counts the failures made.  With min, a write or pread of
# fewer bytes goes through (alertd's reads of a file's tail do).
# Call it before the first test: without cc it skips (fails under CI).
sub fault {
    my ($self, $call, $suffix, $errno, $min) = @_;

    return { LD_PRELOAD => $self->preload('fault'),
             AIRLOCK_FAULT => "$call $suffix $errno"
                              . (defined $min ? " $min" : ''),
             AIRLOCK_FAULT_ON => "$self->{dir}/fault-on",
             AIRLOCK_FAULT_ERRNO => "$self->{dir}/fault-errno" };
}


# The stepping wall clock (lib/clock.c), built likewise: returns the
# environment in which alertd's wall clock is the machine's plus what
# clock_step() last set (0 at first), its monotonic and boot clocks the
# machine's.  Call it before the first test, as fault().
sub clock {
    my ($self) = @_;

    $self->clock_step(0);
    return { LD_PRELOAD => $self->preload('clock'),
             AIRLOCK_CLOCK_STEP => "$self->{dir}/clock-step" };
}

# alertd's wall clock from now on: the machine's plus seconds (written
# whole by write_file's rename: alertd never reads half a number)
sub clock_step { $_[0]->write_file('clock-step', int($_[1]) . "\n") }


# The set-up of a test of the stepping clock: alertd on it (clock()),
# delivering to a receiver, with an hour of --repeat-interval and of
# --poll-interval, so that no window ends and no poll comes during the
# test but as its steps make them.  secret: the receiver's (a webhook's
# hmac_secret); alertmanager: the receiver is an Alertmanager sink;
# args: more of alertd's options (a later one wins); fault: the
# arguments of fault(), its injector loaded with the clock; the other
# options go to receiver().  Returns the receiver; clock_alertd() starts
# alertd again the same way.
sub clock_setup {
    my ($self, %opt) = @_;
    my $am = delete $opt{alertmanager};
    my $fault = delete $opt{fault};
    $self->{clock_args} = delete $opt{args} // [];
    my $secret = $self->secret('hook', delete $opt{secret});
    my $r = $self->receiver(secret => $secret, %opt);

    $self->policy($am ? { alertmanager => "http://127.0.0.1:$r->{port}" }
                      : { webhook => $r->{url}, secret => 'hook' });
    $self->{clock_env} = $self->clock;
    if ($fault) {
        my $f = $self->fault(@$fault);
        $f->{LD_PRELOAD} = "$self->{clock_env}{LD_PRELOAD} "
                           . ($f->{LD_PRELOAD} =~ s/^.*\s//r);
        $self->{clock_env} = { %{$self->{clock_env}}, %$f };
    }
    $self->clock_alertd;

    return $r;
}

sub clock_alertd {
    my ($self, @args) = @_;
    return $self->alertd_env($self->{clock_env}, '--repeat-interval', '1h',
                             '--poll-interval', '1h',
                             @{$self->{clock_args}}, @args);
}

# the open group whose first alert is id, as saved; undef if none
sub group_of {
    my ($self, $id) = @_;
    my ($g) = grep { $_->{first_id} eq $id }
              @{$self->saved_state->{groups}};
    return $g;
}

# The start of a test of a step forward (clock_setup()'s alertd): an
# alert for reason delivered to the receiver r, then a repeat of it,
# stamped a second later, that a round read (folded into the group the
# first opened: its window an hour).  Returns the first's id and the
# time it is stamped with.
sub clock_repeated {
    my ($self, $r, $reason) = @_;
    my $t0 = time;
    my $first = $self->alert(client => 'agent', reason => $reason,
                             time => now_rfc3339($t0));

    Test::More::ok($self->wait_for(sub { $self->delivered($r, $first) }),
                   'the first is sent');
    $self->alert(client => 'agent', reason => $reason,
                 time => now_rfc3339($t0 + 1));
    Test::More::ok($self->settle, 'a round read the repeat');

    return ($first, $t0);
}

# Once alertd's wall clock is two hours ahead (clock_step(2 * 3600))
# after clock_repeated() (reason, first, t0): another repeat and a mark,
# stamped by the stepped clock, as nginx would stamp them, and the
# checks that the window moved with the clock: the mark delivered and
# not the fold nor the repeat, the log's warning, the group saved with
# both repeats, an hour long, moved two hours.  o: after (the mark's
# check: "an alert after AFTER is delivered"), window (the fold's check:
# "WINDOW: no fold sent"), said (what the warning says after the
# seconds, as " while ..."; none: '')
sub clock_forward_checks {
    my ($self, $r, $reason, $first, $t0, %o) = @_;
    my $ahead = 2 * 3600;
    my $said = $o{said} // '';
    my $after = $self->alert(client => 'agent', reason => $reason,
                             time => now_rfc3339(time + $ahead));
    my $mark = $self->alert(client => 'agent', reason => 'mark',
                            time => now_rfc3339(time + $ahead));

    Test::More::ok($self->wait_for(sub { $self->delivered($r, $mark) }),
                   "an alert after $o{after} is delivered");
    Test::More::ok(!$self->delivered($r, "$first~1"),
                   "$o{window}: no fold sent");
    Test::More::ok(!$self->delivered($r, $after),
                   'the repeat stamped after the step is not sent on its '
                   . 'own');
    Test::More::is(scalar($self->accepted($r)), 2,
                   'nothing but the first and the mark');
    # 7200 s, give or take the moment between alertd's two clock readings
    Test::More::like($self->alertd_log,
                     qr/\bwarn(?:ing)?:\ the\ wall\ clock\ stepped\ forward
                        \ by\ (?:7199\.9\d\d|72\d\d\.\d{3})\ s\Q$said\E\b/x,
                     "the log says the clock stepped forward$said");

    my $g = $self->group_of($first);
    Test::More::ok($g, 'the group is open');
    Test::More::is($g && $g->{count}, 2, 'with both repeats');
    Test::More::is($g && $g->{end} - $g->{start}, 3600 * 1000,
                   'its window an hour long');
    Test::More::ok($g && abs($g->{start} - int(($t0 + $ahead) * 1000))
                         < 60 * 1000,
                   'moved two hours forward with the clock')
        or Test::More::diag("start " . ($g ? $g->{start} : 'none')
                            . ", the first at " . int($t0 * 1000));
}


# tests/alertd/lib/NAME.c built into the test's directory as a shared
# object: what LD_PRELOAD takes to load it into alertd
sub preload {
    my ($self, $name) = @_;
    my $so = "$self->{dir}/$name.so";

    Airlock::Prereq::need_cmd('cc');
    my $cmd = "cc -shared -fPIC -O2 -Wall -Werror -o \Q$so\E "
              . "\Q$TOP\E/tests/alertd/lib/$name.c -ldl 2>&1";
    my $out = `$cmd`;
    Airlock::Prereq::absent("cannot build tests/alertd/lib/$name.c: $out")
        if $?;

    # an ASan-built alertd runs only with the runtime first in the list
    my $preload = $so;
    my $mk = $self->read_file("$self->{build}/config.mk");
    if ($mk =~ /^SAN\s*=\s*1\s*$/m) {
        my $cc = $mk =~ /^CC\s*=\s*(\S+)/m ? $1 : 'cc';
        my $asan = `$cc -print-file-name=libasan.so 2>/dev/null` // '';
        chomp $asan;
        $preload = "$asan $so" if $asan =~ m{^/};
    }

    return $preload;
}

# the failures made from now on have this errno, not fault()'s
sub fault_cause { $_[0]->write_file('fault-errno', $_[1]) }


sub fault_on { $_[0]->write_file('fault-on', '') }

sub fault_off {
    my ($self) = @_;
    rename "$self->{dir}/fault-on", "$self->{dir}/fault-made"
        or die "rename: $!";
}

# how many failures the injector made (since fault_on)
sub fault_made {
    my ($self) = @_;
    my $f = "$self->{dir}/fault-" . (-e "$self->{dir}/fault-on" ? 'on'
                                                                : 'made');
    return (-s $f) || 0;
}


# The set-up of a test of a file beside the journal that fails (77 to
# 81, 84): the fault injector (fault()) on the journal's copy or
# rotated file, JOURNAL.1, making call fail with errno (from min bytes
# on, if given); a webhook receiver and its policy.  Returns the
# receiver.  beside_alertd() starts alertd in the injector's
# environment, beside_alert() writes an alert and keeps its id for
# sent_once(), copytruncate() makes a copytruncate that alertd finds
# while it runs, once_run() runs alertd --once.
sub beside_setup {
    my ($self, $call, $errno, $min) = @_;
    my $base = (split m{/}, $self->{journal})[-1];

    $self->{beside_env} = $self->fault($call, "$base.1", $errno, $min);
    $self->{beside_ids} = [];

    my $r = $self->receiver(secret => $self->secret('hook', 'whsec_FAKE'
                                                            . 'F' x 28));
    $self->policy({ webhook => $r->{url}, secret => 'hook' });
    $self->{beside_r} = $r;

    return $r;
}

sub beside_env { $_[0]{beside_env} }

# alertd, -v, with an hour of --repeat-interval, a poll every second and
# --rotate-grace grace (default an hour: it does not end in the test),
# in the injector's environment
sub beside_alertd {
    my ($self, $grace, @args) = @_;
    return $self->alertd_env($self->{beside_env}, '--verbose',
                             '--repeat-interval', '1h', '--poll-interval',
                             '1s', '--rotate-grace', $grace // '1h', @args);
}

# an alert for reason appended to path (default the journal); its id is
# kept for sent_once() unless forget() takes it out
sub beside_alert {
    my ($self, $reason, $path) = @_;
    my ($id, $line) = $self->alert_line(reason => $reason);
    $self->append($line, $path);
    push @{$self->{beside_ids}}, $id;
    return $id;
}

# an alert not owed (in a file that never can be read)
sub forget {
    my ($self, @ids) = @_;
    my %gone = map { $_ => 1 } @ids;
    $self->{beside_ids} = [grep { !$gone{$_} } @{$self->{beside_ids}}];
}

# how many times each id was accepted: "1,1,0"
sub times_sent {
    my ($self, @ids) = @_;
    my %n;
    $n{$_->{id}}++ for $self->accepted($self->{beside_r});
    return join(',', map { $n{$_} // 0 } @ids);
}

# the check that every alert beside_alert() wrote and not forgotten was
# sent once
sub sent_once {
    my ($self, $name) = @_;
    my @ids = @{$self->{beside_ids}};
    Test::More::is($self->times_sent(@ids), join(',', map { 1 } @ids),
                   $name // 'every other alert sent once');
}

# whether the receiver took a before b
sub sent_before {
    my ($self, $a, $b) = @_;
    my @got = map { $_->{id} } $self->accepted($self->{beside_r});
    my ($ia) = grep { $got[$_] eq $a } 0 .. $#got;
    my ($ib) = grep { $got[$_] eq $b } 0 .. $#got;
    return defined $ia && defined $ib && $ia < $ib;
}

# A copytruncate while alertd is held (SIGSTOP), so that it finds the
# journal truncated and the copy there (09-truncate.t): a line it has
# not read (reason unread), the copy made, the failure on, the journal
# truncated and a line written to it again (reason after).  Returns
# the two ids and the journal's size before the truncation.
sub copytruncate {
    my ($self, $unread, $after) = @_;
    my $j = $self->{journal};

    kill 'STOP', $self->{alertd};
    my $b = $self->beside_alert($unread);
    my $off = -s $j;
    $self->fault_on;
    system('cp', $j, "$j.1") == 0 or die "cp: $?";
    truncate $j, 0 or die "truncate: $!";
    my $c = $self->beside_alert($after);
    kill 'CONT', $self->{alertd};

    return ($b, $c, $off);
}

# alertd --once, its environment env (default the injector's), its log
# in once-N.log: (exit status, or "hung", and its log)
sub once_run {
    my ($self, $env) = @_;
    my $name = 'once-' . ++$self->{once_n};
    $env //= $self->{beside_env};

    my $pid = do {
        local @ENV{keys %$env} = values %$env;
        $self->spawn($name, $self->{bin}, '--policy',
                     "$self->{dir}/policy.yaml", '--keyring',
                     $self->{keyring}, '--journal', $self->{journal},
                     '--state', $self->{state}, '--once');
    };
    my $st = $self->reap($pid);
    unless (defined $st) {
        kill 'KILL', $pid;
        $self->reap($pid, 5);
    }

    return (defined $st ? $st >> 8 : 'hung', $self->read_file("$name.log"));
}


# An HTTP server on 127.0.0.1 that answers every POST as answer says:
# answer->(target, body) returns the status line's status ("404 Not
# Found") and the body.  A child of the test, its log in NAME.log;
# returns its port.  For a receiver that quotes the request back (a
# 404 page), which webhook-receiver.py does not.
sub answering_server {
    my ($self, $answer, $name) = @_;
    $name //= 'server';
    my $port_file = "$self->{dir}/$name.port";
    my $log = "$self->{dir}/$name.log";

    STDOUT->flush;
    STDERR->flush;

    my $pid = fork // die "fork: $!";

    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>>', $log) or POSIX::_exit(127);
        open(STDERR, '>&', \*STDOUT);
        eval { serve($port_file, $answer) };
        print STDERR $@ if $@;
        POSIX::_exit($@ ? 1 : 0);
    }

    $self->{pids}{$pid} = $name;

    $self->wait_for(sub { -s $port_file })
        or die "$name did not start:\n" . $self->read_file("$name.log");

    return $self->read_file($port_file);
}

sub serve {
    my ($port_file, $answer) = @_;
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Listen => 16, ReuseAddr => 1)
        or die "listen: $!";

    open(my $fh, '>', "$port_file.tmp") or die "write $port_file: $!";
    print $fh $l->sockport;
    close $fh;
    rename "$port_file.tmp", $port_file or die "rename $port_file: $!";

    while (my $c = $l->accept) {
        local $/ = "\r\n\r\n";
        my $head = <$c> // next;
        my ($target) = $head =~ m{^POST (\S+)};
        my ($len) = $head =~ /^Content-Length: (\d+)/mi;
        my $body = '';
        read($c, $body, $len // 0);
        my ($status, $text) = $answer->($target // '?', $body);
        print $c "HTTP/1.1 $status\r\nContent-Type: text/plain\r\n"
               . 'Content-Length: ' . length($text)
               . "\r\nConnection: close\r\n\r\n$text";
        close $c;
    }
}


# A failure that repeats, as alertd says it (ad_fail(), with -v): each
# try is a line matching re, an error or warning line when said, a debug
# line between.  Looks at the tries up to the line that says it works
# again, if there is one (matching over), in alertd's log or the text
# log, and returns
#
#   tries   the lines of the tries, in order
#   bad     what is not as ad_fail() says it: the first said as the
#           first, each later said line with the count of tries since
#           the last said and in a row, each debug line its number
#   said    the counts since the last said line, of each later said line
#   last    the index of the last said line in tries
#   over    the count of failures and of those since the last line the
#           recovery line gives, and how many recovery lines there are
sub failures {
    my ($self, $re, $over, $log) = @_;
    my (@l, $n, $total, $untold);

    $n = 0;
    for (split /\n/, $log // $self->alertd_log) {
        if (defined $over && /$over/) {
            $n++;
            next if $n > 1;
            ($total, $untold) = /works again, after (\d+) failure\(s\) in [^(]+ \((\d+) since the last line\)$/;
            next;
        }
        push @l, $_ if !$n && /$re/;
    }

    my $told = qr/\(still failing: (\d+) time\(s\) since the last line, /
               . qr/(\d+) in a row in [^)]+\)$/;
    my ($last, $bad, @said) = (0, '');

    $bad .= "the first is not said: " . ($l[0] // '(none)') . "\n"
        unless @l && $l[0] =~ /\b(?:error|warning): / && $l[0] !~ $told;

    for my $i (1 .. $#l) {
        if ($l[$i] =~ /\bdebug: /) {
            $bad .= "not try " . ($i + 1) . ": $l[$i]\n"
                unless $l[$i] =~ /\(failure (\d+) in a row\)$/
                       && $1 == $i + 1;
            next;
        }

        my ($since, $all) = $l[$i] =~ /\b(?:error|warning): .*$told/;
        $bad .= "no counts: $l[$i]\n" unless defined $all;
        $bad .= "counts $since, $all for try " . ($i + 1) . " after try "
                . ($last + 1) . "\n"
            if defined $all && ($since != $i - $last || $all != $i + 1);
        push @said, $since // 0;
        $last = $i;
    }

    return { tries => \@l, bad => $bad, said => \@said, last => $last,
             over => [$total, $untold, $n] };
}


# The checks of what failures() returned while the failure lasts: each
# later said line counts the tries since the last and in a row, and not
# a line a try.  $what starts each check's name ("" or "name: ").
sub said_checks {
    my ($self, $f, $what) = @_;

    Test::More::is($f->{bad}, '', "${what}each later said line counts the "
                   . 'tries since the last one and in all; the others are '
                   . 'debug lines')
        or Test::More::diag(join "\n", @{$f->{tries}});
    Test::More::ok(@{$f->{said}} && $f->{said}[0] > 1, "${what}not a line "
                   . 'a try: the second came after '
                   . ($f->{said}[0] // 0) . ' tries');
}

# ... and once it works again: the recovery line, once, with the count
# of failures (each one the injector made, when $made) and of those since
# the last said line
sub over_checks {
    my ($self, $f, $what, $made) = @_;

    Test::More::is($f->{over}[0], scalar @{$f->{tries}},
                   "${what}works again, with the count of failures");
    Test::More::is($f->{over}[0], $self->fault_made,
                   "${what}... each one a failure made") if $made;
    Test::More::is($f->{over}[1], $#{$f->{tries}} - $f->{last},
                   "${what}... and of those since the last said line");
    Test::More::is($f->{over}[2], 1, "${what}... said once");
}


# stops what is still running, checks every log for sanitizer reports
# (an ASan/UBSan build of alertd), and ends the plan
sub done {
    my ($self) = @_;

    $self->done_logs;
    Test::More::done_testing();
}


# done without ending the plan: for a test with more than one directory
sub done_logs {
    my ($self) = @_;

    $self->cleanup;

    opendir(my $d, $self->{dir}) or die;
    my @bad;
    for my $f (sort grep { /\.(log|err)$/ } readdir $d) {
        my $text = $self->read_file($f);
        my $re = qr/AddressSanitizer|LeakSanitizer|runtime error:/;
        push @bad, "$f: $1" while $text =~ /^(.*(?:$re).*)$/mg;
    }

    Test::More::is(join("\n", @bad), '', 'no sanitizer reports');
}


sub uniq {
    my %s;
    return grep { !$s{$_}++ } @_;
}


sub cleanup {
    my ($self) = @_;
    return if $$ != $self->{owner};
    for my $pid (keys %{$self->{pids}}) {
        kill 'TERM', $pid;
    }
    for my $pid (keys %{$self->{pids}}) {
        $self->reap($pid, 5) // do { kill 'KILL', $pid; $self->reap($pid, 2) };
    }
}


sub DESTROY { $_[0]->cleanup }

END {
    local $?;
    $_->cleanup for grep { defined } @LIVE;
}


1;
