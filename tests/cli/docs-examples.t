#!/usr/bin/perl
# Every ```yaml block of README.md and docs/*.md, checked by airlockctl
# check as an operator would use it.
#
# A block that is a whole policy (version, clients and routes or llm at
# the top) is checked as it stands.  Any other block is a fragment, and
# is spliced into a small valid policy, by what its keys are:
#
#   top-level sections (indent 0)    clients:, secrets:, routes:, ...:
#                                    entries of a mapping replace the
#                                    base's of the same name, a list
#                                    (routes, llm) replaces the base's
#   "- name: ..." entries            routes (llm when they name a
#                                    provider or prefix); a route is
#                                    completed from the base route
#   client / secret / upstream       entries of that section
#   route fields (match:, body:...)  the fields of the base route
#   anything else                    JSON fields of the base route's body
#
# A block meant to show an error carries a comment "# refused: TEXT": it
# must fail check, with TEXT in airlockctl's message.  The docs' token
# placeholder (PUT-THE-SHA256-OF-YOUR-TOKEN-HERE) is refused so: a block
# that holds it must also pass with a hash in its place, the rest of it
# being what the doc means.  A failure names the doc, the line and
# airlockctl's message, with the policy checked.

use strict;
use warnings;
use Digest::SHA qw(sha256_hex);
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

my @top_keys = qw(version clients secrets upstreams routes llm alerts);
my %is_top = map { $_ => 1 } @top_keys;
my %route_field = map { $_ => 1 }
    qw(name description clients match params upstream to query body inject
       cookies scrub);

# the smallest valid policy, plus the names the docs' fragments refer to
# (unused clients, secrets and upstreams are allowed)
my %base = (
    version => ['version: 1'],
    clients => [
        '  agent:  { unix_uid: 1000 }',
        '  worker: { unix_uid: 1001 }',
    ],
    secrets => [
        map { "  $_: { file: /run/credentials/airlock/$_ }" }
            qw(prom_basic logs_token github_pr metrics_key openai_key
               ollama_key azure_key alert_hmac),
    ],
    upstreams => [
        '  prometheus: { url: "http://127.0.0.1:9090" }',
        '  logs:       { url: "http://127.0.0.1:3100" }',
        '  github:     { url: "https://api.github.com" }',
        '  ollama:     { url: "http://127.0.0.1:11434/v1" }',
    ],
    routes => [],
    llm => [],
    alerts => ['  deny: { threshold: 3, window: 60s }'],
);
my @base_route = (
    '    name: base',
    '    clients: [agent]',
    '    match: { method: GET, path: /base }',
    '    upstream: prometheus',
    '    to: /base',
);

# a line is [text, doc line or undef (the base's), column shift]
sub base_lines { return map { [$_, undef, 0] } @_ }

sub indent_of { return $_[0] =~ /^( *)/ ? length $1 : 0 }

sub is_blank { return $_[0] =~ /^\s*(#.*)?$/ }

# lines moved to another indentation
sub reindent {
    my ($to, @lines) = @_;
    my @text = grep { !is_blank($_->[0]) } @lines;
    my $min = @text ? (sort { $a <=> $b } map { indent_of($_->[0]) } @text)[0]
                    : 0;
    my $d = $to - $min;

    return map {
        my ($t, $l, $c) = @$_;
        if (is_blank($t)) {
            [$t, $l, $c];
        } else {
            [($d >= 0 ? ' ' x $d . $t : substr($t, -$d)), $l, $c + $d];
        }
    } @lines;
}

# the lines split where a line at indent $ind starts a new item: a list
# of [key, lines]; the key is "-" for a list entry
sub split_items {
    my ($ind, @lines) = @_;
    my @items;

    for my $ln (@lines) {
        my $t = $ln->[0];
        if (!is_blank($t) && indent_of($t) == $ind
            && $t =~ /^ *(- |[A-Za-z0-9_"'-]+\s*:)/)
        {
            my $k = $1;
            $k =~ s/\s*:$//;
            $k =~ s/^["']|["']$//g;
            push @items, [$k eq '- ' ? '-' : $k, []];
        }
        if (@items) {
            push @{ $items[-1][1] }, $ln;
        }
    }

    return @items;
}

# a route entry ("- " at indent 2) completed from the base route's fields
sub complete_route {
    my (@lines) = @_;
    my (@fields, %have);

    # "  - name: x" becomes "    name: x", a field like the others
    @lines = reindent(2, @lines);
    $lines[0] = [do { (my $t = $lines[0][0]) =~ s/^  - /    /; $t },
                 $lines[0][1], $lines[0][2]];
    for my $it (split_items(4, @lines)) {
        $have{ $it->[0] } = 1;
        push @fields, @{ $it->[1] };
    }
    for my $it (split_items(4, base_lines(@base_route))) {
        push @fields, @{ $it->[1] } unless $have{ $it->[0] };
    }
    $fields[0] = [do { (my $t = $fields[0][0]) =~ s/^    /  - /; $t },
                  $fields[0][1], $fields[0][2]];

    return @fields;
}

# the policy of a block's lines: (kind, lines) or (undef, why)
sub policy_of {
    my (@lines) = @_;
    my @text = grep { !is_blank($_->[0]) } @lines;
    my $min = (sort { $a <=> $b } map { indent_of($_->[0]) } @text)[0];
    my %sec = map { $_ => [base_lines(@{ $base{$_} })] } @top_keys;
    my $kind;

    if ($min == 0) {
        my @items = split_items(0, @lines);
        my %k = map { $_->[0] => 1 } @items;
        my @bad = grep { !$is_top{$_} } keys %k;

        return (undef, "unknown top-level keys: @bad") if @bad;
        if ($k{version} && $k{clients} && ($k{routes} || $k{llm})) {
            return ('policy', @lines);
        }
        $kind = 'sections';
        for my $it (@items) {
            my ($name, $l) = @$it;
            my @body = @$l[1 .. $#$l];
            if ($name eq 'version') {
                $sec{version} = [$l->[0]];
            } elsif ($name eq 'routes') {
                $sec{routes} = [map { complete_route(@{ $_->[1] }) }
                                split_items(2, reindent(2, @body))];
            } elsif ($name eq 'llm') {
                $sec{llm} = [reindent(2, @body)];
            } else {
                $sec{$name} = merge_map($sec{$name}, reindent(2, @body));
            }
        }

    } elsif ($text[0][0] =~ /^ *- /) {
        my $llm = grep { $_->[0] =~ /^ *(- )?(provider|prefix):/ } @text;
        if ($llm) {
            $kind = 'llm entries';
            $sec{llm} = [reindent(2, @lines)];
        } else {
            $kind = 'route entries';
            $sec{routes} = [map { complete_route(@{ $_->[1] }) }
                            split_items(2, reindent(2, @lines))];
        }

    } else {
        my @items = split_items($min, @lines);
        my @keys = map { $_->[0] } @items;
        my $all = join "\n", map { $_->[0] } @text;

        if ($all =~ /\b(unix_uid|unix_gid|cidr|token_sha256):/) {
            $kind = 'clients';
            $sec{clients} = merge_map($sec{clients}, reindent(2, @lines));
        } elsif ($all =~ /\{\s*(sealed|file):/) {
            $kind = 'secrets';
            $sec{secrets} = merge_map($sec{secrets}, reindent(2, @lines));
        } elsif ($all =~ /\{\s*url:/ && !grep { $route_field{$_} } @keys) {
            $kind = 'upstreams';
            $sec{upstreams} = merge_map($sec{upstreams}, reindent(2, @lines));
        } elsif (!grep { !$route_field{$_} } @keys) {
            $kind = 'route fields';
            my @route = reindent(4, @lines);
            unshift @route, ['    name: example', undef, 0];
            $route[0][0] = '  - name: example';
            $sec{routes} = [complete_route(@route)];
        } else {
            $kind = 'body fields';
            $sec{routes} = [complete_route(base_lines('  - name: example',
                                                      '    body:',
                                                      '      max_bytes: 65536',
                                                      '      json:'),
                                           reindent(8, @lines))];
        }
    }

    my @policy;
    for my $s (@top_keys) {
        next unless @{ $sec{$s} };
        push @policy, $s eq 'version' ? @{ $sec{$s} }
                                      : (base_lines("$s:"), @{ $sec{$s} });
    }
    return ($kind, @policy);
}

# a mapping section's lines, with entries replaced or added
sub merge_map {
    my ($old, @new) = @_;
    my @ni = split_items(2, @new);
    my %n = map { $_->[0] => 1 } @ni;

    return [(map { @{ $_->[1] } } grep { !$n{ $_->[0] } }
             split_items(2, @$old)),
            map { @{ $_->[1] } } @ni];
}

# the ```yaml blocks of a file: [file, line of the first, lines]
sub blocks {
    my ($path, $name) = @_;
    my (@blocks, $cur, $fence);

    open my $fh, '<', $path or die "$path: $!";
    while (my $t = <$fh>) {
        chomp $t;
        if (!$cur) {
            if ($t =~ /^( *)```yaml\s*$/) {
                $fence = length $1;
                $cur = [$name, $. + 1, []];
            }
            next;
        }
        if ($t =~ /^ *```\s*$/) {
            push @blocks, $cur;
            undef $cur;
            next;
        }
        $t =~ s/^ {0,$fence}//;
        push @{ $cur->[2] }, [$t, $., 0];
    }
    close $fh;

    return @blocks;
}

my @docs = ('README.md', map { "docs/$_" } do {
    opendir my $dh, "$top/docs" or die "$top/docs: $!";
    sort grep { /\.md$/ } readdir $dh;
});

my @blocks = map { blocks("$top/$_", $_) } @docs;
my $placeholder = 'PUT-THE-SHA256-OF-YOUR-TOKEN-HERE';
my $hash = sha256_hex("FAKE-docs-token-$$-" . time);

# the appliance's own users and groups (conf/airlock.sysusers), which the
# docs name, are uid or gid 0 on a machine that lacks them
my %absent;
open my $su, '<', "$top/conf/airlock.sysusers" or die "airlock.sysusers: $!";
while (<$su>) {
    next unless /^([ug])\s+(\S+)/;
    my ($t, $n) = ($1, $2);
    $absent{$n} = 1 unless $t eq 'u' ? defined getpwnam($n)
                                     : defined getgrnam($n);
}
close $su;
if (%absent) {
    for my $ln (map { @{ $_->[2] } } @blocks) {
        next unless $ln->[0] =~ /unix_[ug]id:/;
        $ln->[0] =~ s/\b([a-z][a-z-]*)\b/$absent{$1} ? '0' : $1/ge;
    }
}
ok(@blocks >= 25, scalar(@blocks) . ' yaml blocks found in the docs');

# checks a policy made of a block; (rc, airlockctl's message told as the
# doc's lines), with the policy shown on failure by the caller
sub check_policy {
    my ($doc, @policy) = @_;
    my $path = write_file('doc.yaml', join('', map { "$_->[0]\n" } @policy));
    my ($rc, $out) = run_ctl('check', $path);

    # airlockctl's file:line:column, told as the doc's
    $out =~ s{^\Q$path\E:(\d+):(\d+):}{
        my $ln = $policy[$1 - 1];
        ($ln && defined $ln->[1])
            ? "$doc:$ln->[1]:" . ($2 - $ln->[2]) . ':'
            : "(the test's base policy, line $1):$2:";
    }gme;

    return ($rc, $out);
}

sub show_failure {
    my ($rc, $out, @policy) = @_;
    my $n = 0;

    diag("airlockctl check exited $rc:\n$out");
    diag("the policy checked:\n"
         . join('', map { sprintf "%3d %-5s %s\n", ++$n,
                              defined $_->[1] ? $_->[1] : '', $_->[0] }
                    @policy));
}

for my $b (@blocks) {
    my ($doc, $first, $lines) = @$b;
    my ($kind, @policy) = policy_of(@$lines);
    my $where = "$doc:$first";

    if (!defined $kind) {
        fail("$where: a yaml block the test cannot place");
        diag("$where: $policy[0]");
        next;
    }

    my ($refused) = map { $_->[0] =~ /#\s*refused:\s*(.*?)\s*$/ ? $1 : () }
                    @$lines;
    my ($rc, $out) = check_policy($doc, @policy);

    if (defined $refused) {
        ok($rc == 1 && index($out, $refused) >= 0,
           "$where: $kind, refused with \"$refused\"")
            or show_failure($rc, $out, @policy);
    } else {
        ok($rc == 0, "$where: $kind, passes check")
            or show_failure($rc, $out, @policy);
    }

    next unless grep { index($_->[0], $placeholder) >= 0 } @policy;

    my @filled = map { [do { (my $t = $_->[0]) =~ s/\Q$placeholder\E/$hash/g;
                             $t }, $_->[1], $_->[2]] } @policy;
    ($rc, $out) = check_policy($doc, @filled);
    ok($rc == 0, "$where: $kind, passes check with a hash for the placeholder")
        or show_failure($rc, $out, @filled);
}

done_testing();
