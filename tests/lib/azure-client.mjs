// Drives the official openai package's AzureOpenAI client against the
// Airlock LLM gateway, for tests/nginx/80-llm-azure.t.  The client is
// built as Azure's documentation builds it, with the gateway's prefix as
// the resource endpoint:
//
//   AIRLOCK_ENDPOINT=http://127.0.0.1:PORT/v1/proxy/azure \
//   AIRLOCK_API_KEY=TOKEN node azure-client.mjs STEP...
//
// Steps: chat, alias, stream, embeddings, responses, deployment,
// bad-model, bad-key.  Each prints one JSON line: what the SDK returned,
// or the class and status of the error it raised.

import { AzureOpenAI } from 'openai';

function client(extra) {
    return new AzureOpenAI({
        endpoint: process.env.AIRLOCK_ENDPOINT,
        apiKey: process.env.AIRLOCK_API_KEY,
        apiVersion: '2024-06-01',
        maxRetries: 0,
        timeout: 10000,
        ...extra,
    });
}

const messages = [{ role: 'user', content: 'Say hello' }];

async function chat(c, model) {
    const r = await c.chat.completions.create({ model, messages });
    return { text: r.choices[0].message.content, model: r.model,
             usage: r.usage };
}

const steps = {
    chat: () => chat(client(), 'gpt4o-mini-prod'),

    alias: () => chat(client(), 'fast'),

    async stream() {
        const s = await client().chat.completions.create({
            model: 'gpt4o-mini-prod', messages, stream: true,
            stream_options: { include_usage: true },
        });
        let text = '';
        let usage = null;

        for await (const chunk of s) {
            if (chunk.usage) {
                usage = chunk.usage;
            }
            for (const ch of chunk.choices) {
                text += ch.delta?.content ?? '';
            }
        }

        return { text, usage };
    },

    async embeddings() {
        const r = await client().embeddings.create({
            model: 'embed-prod', input: 'x',
        });
        return { dims: r.data[0].embedding.length, usage: r.usage };
    },

    async responses() {
        const r = await client().responses.create({
            model: 'gpt4o-mini-prod', input: 'Say hello',
        });
        return { text: r.output_text, usage: r.usage };
    },

    // a client bound to one deployment; the model it names is Azure's
    // business, not the path's
    deployment: () => chat(client({ deployment: 'gpt4o-mini-prod' }),
                           'gpt-4o'),

    'bad-model': () => chat(client(), 'other-deployment'),

    'bad-key': () => chat(client({ apiKey: 'not-a-client' }),
                          'gpt4o-mini-prod'),
};

for (const name of process.argv.slice(2)) {
    let out;

    try {
        out = { step: name, ok: true, result: await steps[name]() };
    } catch (e) {
        out = { step: name, ok: false, error: e.constructor.name,
                status: e.status ?? null, code: e.code ?? null,
                type: e.type ?? null, message: e.message ?? null };
    }

    console.log(JSON.stringify(out));
}
