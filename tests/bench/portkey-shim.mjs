// Loaded into Portkey's Node process by tests/bench/llm.pl (node --import).
//
// Portkey 1.15.2 on Node 20 answers every streamed OpenAI call with 500
// "Something went wrong" (TypeError: immutable in
// responseService.updateHeaders: it re-uses the provider response's
// headers, which fetch() made immutable; Portkey-AI/gateway issues 1389
// and 1550).  This gives streamed provider responses mutable headers, as
// the fix proposed upstream does; JSON responses are left as they are.

const providerFetch = globalThis.fetch;

globalThis.fetch = async (...args) => {
    const r = await providerFetch(...args);

    if (!(r.headers.get('content-type') || '')
            .startsWith('text/event-stream')) {
        return r;
    }

    return new Response(r.body, { status: r.status,
                                  statusText: r.statusText,
                                  headers: new Headers(r.headers) });
};
