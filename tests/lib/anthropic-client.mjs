// Drives the official @anthropic-ai/sdk package against the Airlock LLM
// gateway, for tests/nginx/73-llm-anthropic-client.t.  The test installs
// the package from tests/llm-client/package-lock.json into a directory of
// its own and runs this script from there.  The SDK appends /v1/messages
// to its base URL.
//
//   AIRLOCK_BASE_URL=http://127.0.0.1:PORT/v1/proxy/anthropic \
//   AIRLOCK_API_KEY=TOKEN node anthropic-client.mjs STEP...
//
// Steps: messages, stream, bad-model, models (a page of one model at a
// time, the SDK following after_id), retrieve, retrieve-missing.  Each
// prints one JSON line: what the SDK returned, or the class and status of
// the error it raised.

import Anthropic from '@anthropic-ai/sdk';

const client = new Anthropic({
    baseURL: process.env.AIRLOCK_BASE_URL,
    apiKey: process.env.AIRLOCK_API_KEY,
    maxRetries: 0,
    timeout: 10000,
});

const messages = [{ role: 'user', content: 'Say hello' }];

const steps = {
    async messages() {
        const r = await client.messages.create({
            model: 'claude-3-5-haiku', max_tokens: 100, messages,
        });
        return { text: r.content.map((c) => c.text ?? '').join(''),
                 usage: r.usage };
    },

    async stream() {
        const s = client.messages.stream({
            model: 'claude-3-5-haiku', max_tokens: 100, messages,
        });
        let text = '';
        s.on('text', (t) => { text += t; });
        const m = await s.finalMessage();
        return { text, usage: m.usage };
    },

    'bad-model': () => client.messages.create({
        model: 'claude-opus-9', max_tokens: 100, messages,
    }),

    async models() {
        const ids = [];
        for await (const m of client.models.list({ limit: 1 })) {
            ids.push(m.id);
        }
        return { ids };
    },

    async retrieve() {
        const m = await client.models.retrieve('claude-3-5-haiku');
        return { id: m.id, type: m.type };
    },

    'retrieve-missing': () => client.models.retrieve('claude-FAKE-opus'),
};

for (const name of process.argv.slice(2)) {
    let out;

    try {
        out = { step: name, ok: true, result: await steps[name]() };
    } catch (e) {
        out = { step: name, ok: false, error: e.constructor.name,
                status: e.status ?? null, message: String(e.message) };
    }

    console.log(JSON.stringify(out));
}
