// Drives the official openai package against the Airlock LLM gateway, for
// tests/nginx/35-llm-openai-client.t.  The test installs the package from
// tests/llm-client/package-lock.json into a directory of its own and runs
// this script from there.
//
//   AIRLOCK_BASE_URL=http://127.0.0.1:PORT/v1/proxy/openai \
//   AIRLOCK_API_KEY=TOKEN node openai-client.mjs STEP...
//
// Steps: chat, stream, stream-usage, models, retrieve, retrieve-missing,
// embeddings, bad-key, bad-model, over-max.  Each prints one JSON line:
// what the SDK returned, or the class and status of the error it raised.

import OpenAI from 'openai';

const client = new OpenAI({
    baseURL: process.env.AIRLOCK_BASE_URL,
    apiKey: process.env.AIRLOCK_API_KEY,
    maxRetries: 0,
    timeout: 10000,
});

const messages = [{ role: 'user', content: 'Say hello' }];

async function stream(extra) {
    const s = await client.chat.completions.create({
        model: 'gpt-4o-mini', messages, stream: true, ...extra,
    });
    let text = '';
    let chunks = 0;
    let usage = null;

    for await (const chunk of s) {
        chunks++;
        if (chunk.usage) {
            usage = chunk.usage;
        }
        for (const c of chunk.choices) {
            text += c.delta?.content ?? '';
        }
    }

    return { text, chunks, usage };
}

const steps = {
    async chat() {
        const r = await client.chat.completions.create({
            model: 'gpt-4o-mini', messages,
        });
        return { text: r.choices[0].message.content, usage: r.usage };
    },

    stream: () => stream({}),

    'stream-usage': () => stream({ stream_options: { include_usage: true } }),

    async models() {
        const ids = [];
        for await (const m of client.models.list()) {
            ids.push(m.id);
        }
        return { ids };
    },

    async retrieve() {
        const m = await client.models.retrieve('gpt-4o');
        return { id: m.id, object: m.object };
    },

    'retrieve-missing': () => client.models.retrieve('no-such-FAKE-model'),

    async embeddings() {
        const r = await client.embeddings.create({
            model: 'text-embedding-3-small', input: 'x',
        });
        return { dims: r.data[0].embedding.length, usage: r.usage };
    },

    async 'bad-key'() {
        const bad = new OpenAI({
            baseURL: process.env.AIRLOCK_BASE_URL, apiKey: 'not-a-client',
            maxRetries: 0,
        });
        return bad.chat.completions.create({ model: 'gpt-4o-mini', messages });
    },

    'bad-model': () => client.chat.completions.create({
        model: 'gpt-5', messages,
    }),

    'over-budget': () => client.chat.completions.create({
        model: 'gpt-4o-mini', messages: [{ role: 'user', content:
                                           'x'.repeat(4000) }],
    }),
};

for (const name of process.argv.slice(2)) {
    let out;

    try {
        out = { step: name, ok: true, result: await steps[name]() };
    } catch (e) {
        out = { step: name, ok: false, error: e.constructor.name,
                status: e.status ?? null, code: e.code ?? null,
                type: e.type ?? null };
    }

    console.log(JSON.stringify(out));
}
