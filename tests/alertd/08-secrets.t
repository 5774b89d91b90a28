#!/usr/bin/perl
# airlock-alertd opens only the secrets its sinks name: the policy's other
# secrets (route credentials in nginx's credentials directory, which
# alertd's unit cannot read) are never opened, so their absence does not
# stop it.  Under systemd, a file: secret under /run/credentials/ is read
# from alertd's own credentials ($CREDENTIALS_DIRECTORY/ID); the shipped
# unit loads the example policy's webhook secret under that same ID, and
# alertd starts with the example policy as it is.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use POSIX ();
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;
my $top = "$FindBin::Bin/../..";

delete $ENV{CREDENTIALS_DIRECTORY};

my $hook = $t->secret('hook', 'secrets-test-0123456789abcdef');
my $r = $t->receiver(secret => $hook);

# a route credential alertd cannot read: a missing file, and a sealed
# value that is no sealed box
sub policy {
    my ($hook_path, $url) = @_;
    $t->write_file('policy.yaml', <<"YAML");
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
secrets:
  github_pr: { file: /run/credentials/nginx.service/airlock_github_pr }
  ci_token: { file: "$d/no-such-secret" }
  openai_key: { sealed: "bm90IGEgc2VhbGVkIGJveA==" }
  hook: { file: "$hook_path" }
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: { url: "$url", hmac_secret: hook }
YAML
}

policy($hook, $r->{url});

my $pid = $t->alertd;
ok($pid && kill(0, $pid) && $t->alertd_log =~ /\binfo: started /,
   'alertd starts though the route credentials cannot be opened')
    or diag($t->alertd_log);
unlike($t->alertd_log, qr/github_pr|ci_token|openai_key/,
       'and never mentions them');

my $id = $t->alert(client => 'agent');
ok($t->wait_for(sub { $t->delivered($r, $id) }),
   'the webhook gets the alert, signed with its own secret');

# the sink's own secret missing is still an error, located and named
unlink "$d/hook.secret.moved";
rename $hook, "$d/hook.secret.moved" or die "rename: $!";
my @args = ('--policy', "$d/policy.yaml", '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', "$d/state2");
my ($rc, $err) = $t->run_alertd(@args);
is($rc, 2, 'the sink\'s own secret missing: exit 2');
like($err, qr/policy\.yaml:\d+: secret "hook": cannot open \S*hook\.secret/,
     'says which secret, where, and why');
rename "$d/hook.secret.moved", $hook or die "rename: $!";

# the library's checks on a file: secret (airlockctl check, nginx):
# reachable by its owner only, a regular file, no symbolic link
chmod 0644, $hook or die "chmod: $!";
($rc, $err) = $t->run_alertd(@args);
is($rc, 2, 'the sink\'s secret readable by group and others: exit 2');
like($err, qr/secret\ "hook":\ \S*hook\.secret\ can\ be\ reached\ by\ group
              \ or\ others\ \(mode\ 0644\);\ chmod\ 600\ it/x,
     'says so, as airlockctl check does');
chmod 0600, $hook or die "chmod: $!";

symlink $hook, "$d/hook.link" or die "symlink: $!";
policy("$d/hook.link", $r->{url});
($rc, $err) = $t->run_alertd(@args);
is($rc, 2, 'a symbolic link as the secret: exit 2');
like($err, qr/secret "hook": \S*hook\.link is a symbolic link/,
     'says so');

POSIX::mkfifo("$d/hook.fifo", 0600) or die "mkfifo: $!";
policy("$d/hook.fifo", $r->{url});
($rc, $err) = $t->run_alertd(@args);
is($rc, 2, 'a FIFO as the secret: exit 2, at once');
like($err, qr/secret\ "hook":\ \S*hook\.fifo\ is\ not\ a\ regular\ file
              \ \(a\ FIFO\)/x,
     'says so');

policy($hook, $r->{url});
$t->stop($pid, 'TERM');

# systemd credentials: the policy names nginx's copy, alertd reads its own
mkdir "$d/creds" or die "mkdir: $!";
# systemd hands a credential over as a file only the unit can read
$t->write_file("$d/creds/airlock_hook", "secrets-test-0123456789abcdef\n");
chmod 0400, "$d/creds/airlock_hook" or die "chmod: $!";
policy('/run/credentials/nginx.service/airlock_hook', $r->{url});

{
    local $ENV{CREDENTIALS_DIRECTORY} = "$d/creds";
    $pid = $t->alertd;
}
ok($pid && kill(0, $pid), 'with CREDENTIALS_DIRECTORY: alertd starts')
    or diag($t->alertd_log);
$id = $t->alert(client => 'worker');
ok($t->wait_for(sub { $t->delivered($r, $id) }),
   'signed with the secret from its own credentials directory')
    or diag($t->alertd_log);
$t->stop($pid, 'TERM');

# the shipped unit and the example policy agree
my $example = "$top/conf/policy.example.yaml";
my $policy = $t->read_file($example);
my ($hmac) = $policy =~ /hmac_secret:\s*(\w+)/;
ok($hmac, "the example policy's webhook names a secret ($hmac)");
my ($path) = $policy =~ /^\s*\Q$hmac\E:\s*\{\s*file:\s*"?([^\s"}]+)/m;
ok($path, "which is a file: secret ($path)");
(my $cred_id = $path // '') =~ s{.*/}{};

my $unit = $t->read_file("$top/conf/airlock-alertd.service");
like($unit, qr/^LoadCredential=\Q$cred_id\E:/m,
     "airlock-alertd.service loads the credential $cred_id");
my @units = $unit =~ /^LoadCredential=([^:\s]+)/mg;
is_deeply([sort grep { $_ ne 'airlock.key' } @units], [$cred_id],
          'and no other secret of the policy');

$t->write_file("$d/creds/$cred_id", "example-hmac-0123456789abcdef\n");
chmod 0400, "$d/creds/$cred_id" or die "chmod: $!";
($rc, $err) = do {
    local $ENV{CREDENTIALS_DIRECTORY} = "$d/creds";
    $t->run_alertd('--once', '--policy', $example, '--keyring', $t->keyring,
                   '--journal', "$d/journal/none.journal",
                   '--state', "$d/state3");
};
SKIP: {
    skip 'the example policy names users this machine lacks '
         . '(auto/deps test adds them)', 1
        if $err =~ /unix_uid/ && !$ENV{CI};
    is($rc, 0, 'alertd runs with the example policy as it is') or diag($err);
}

$t->done;
