#!/usr/bin/perl

# ngx_http_airlock_llm_module: a chat request may name an earlier audio
# answer of the model by its id, an assistant message's {"audio": {"id":
# "audio_..."}}.  The provider keeps that audio for the account for some
# hours and reads it back into the call, as audio: no route of the
# gateway tells whose answer it was, and every client of an entry shares
# the entry's key, so any client could have the model replay what it
# said to another.  Such a request is refused (body, 400, naming
# provider_tools: stored_files, nothing sent) unless the entry's
# provider_tools allows stored_files, as a file named by its id is
# (205-llm-stored-files.t).  Where it does, the answer read back is
# audio input, billed at audio prices above the policy's, and a client
# with a dollar budget is refused it, as an "input_audio" part is.  An
# "audio" member elsewhere (the top-level output settings, a property of
# a function's schema, an Anthropic tool_use's input, null in a message)
# names nothing stored.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $spender = 'al-spender-token-FAKE-230';
my $sha = $l->proxy->token_sha256($spender);
my %o = (
    clients => qq{  spender: { token_sha256: "$sha" }\n},
    openai_fields => "    prices:\n"
        . "      gpt-4o-mini: { input: 0.15, output: 0.6 }\n",
    openai_clients => "      spender:\n        models: [gpt-4o-mini]\n"
        . "        usd_per_day: 5\n        default_max_tokens: 100\n",
);

$l->setup(%o);
$t->run;

plan tests => 17;

my $agent = $l->token('agent');

sub sent { scalar $l->provider_requests }

sub chat {
    my ($token, @messages) = @_;
    return $l->chat(token => $token,
                    body => { model => 'gpt-4o-mini',
                              messages => [ @messages ] });
}

my @replay = (
    { role => 'user', content => 'Say something' },
    { role => 'assistant', audio => { id => 'audio_FAKE1' } },
    { role => 'user', content => 'Say it again' },
);

my $n = sent();

my $r = chat($agent, @replay);
is($r->{status}, 400, 'an assistant message naming an audio answer: 400');
like($r->{body}, qr/stored_files/, '... naming the family');
like($r->{body}, qr/\\"audio\\"/, '... and the member');

$r = chat($agent, { role => 'user', content => 'Hi' },
          { role => 'assistant', content => 'Hello',
            audio => { id => 'audio_FAKE2', expires_at => 1 } });
is($r->{status}, 400, '... also beside the message\'s text');

$r = chat($agent, { role => 'assistant', audio => 'audio_FAKE3' },
          { role => 'user', content => 'Hi' });
is($r->{status}, 400, '... and given as a string');
is(sent(), $n, '... none of them sent');

$r = chat($agent, { role => 'assistant', content => 'Hello', audio => undef },
          { role => 'user', content => 'Hi' });
is($r->{status}, 200, 'an "audio" of null passes');

$r = $l->chat(token => $agent,
              fields => { modalities => [ 'text', 'audio' ],
                          audio => { voice => 'alloy', format => 'wav' } });
is($r->{status}, 200, 'the top-level audio output settings pass');

$r = $l->chat(token => $agent,
              fields => { tools => [ { type => 'function', function => {
                  name => 'play',
                  parameters => { type => 'object', properties => {
                      audio => { type => 'string' } } } } } ] });
is($r->{status}, 200, 'a function whose argument is named audio passes');

$r = chat($agent, { role => 'user', content => [
              { type => 'input_audio',
                input_audio => { data => 'AAAA', format => 'wav' } } ] });
is($r->{status}, 200, 'an input_audio part passes (no dollar budget)');

$r = $l->messages(token => $agent,
                  body => { model => 'claude-3-5-haiku', max_tokens => 100,
                            messages => [
                      { role => 'user', content => 'Play it' },
                      { role => 'assistant', content => [
                          { type => 'tool_use', id => 'toolu_FAKE1',
                            name => 'play',
                            input => { audio => { id => 'song-1' } } } ] },
                      { role => 'user', content => [
                          { type => 'tool_result',
                            tool_use_id => 'toolu_FAKE1',
                            content => 'played' } ] } ] });
is($r->{status}, 200, 'a tool_use whose input has an "audio" passes');

# ---- an entry whose provider_tools allows stored_files ----------------------

$t->write_file_expand('policy.yaml', $l->policy(%o,
    openai_fields => $o{openai_fields}
                     . "    provider_tools: [stored_files]\n"));
$t->reload;

$n = sent();

$r = chat($agent, @replay);
is($r->{status}, 200, 'stored_files allowed: the audio answer passes');
is(sent(), $n + 1, '... sent');
is($l->last_provider_request->{body}{messages}[1]{audio}{id}, 'audio_FAKE1',
   '... as written');

$r = chat($spender, @replay);
is($r->{status}, 400, 'a client with a dollar budget: 400');
like($r->{body}, qr/audio prices/, '... audio input billed at audio prices');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
