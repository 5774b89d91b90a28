/*
 * The reference reading of a usage the quick reader is checked against,
 * where it leaves the strict scan: counts written as decimals or strings
 * (read through jansson and strtod, rounded up), and a usage the strict
 * scanner refuses (jansson's reading, the last key).  Shared by
 * tests/unit/llm_quick.c and tests/fuzz/fuzz_llm_quick.c.
 */

#ifndef LLM_QUICK_REF_H
#define LLM_QUICK_REF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "airlock.h"
#include "al_llm.h"
#include "al_llm_internal.h"


/* a decimal, or a string of a number, through jansson and strtod */

static uint64_t
ref_lax(const al_llm_resp_t *r, const al_llm_jfield_t *f, uint64_t v)
{
    char          *end;
    double         d;
    json_t        *j;
    uint64_t       x;
    json_error_t   err;

    if (f->type != AL_LLM_JT_REAL && f->type != AL_LLM_JT_STRING) {
        return v;
    }

    j = json_loadb(r->usage + f->at, f->len, JSON_DECODE_ANY, &err);
    if (j == NULL) {
        return v;
    }

    d = 0;

    if (json_is_real(j)) {
        d = json_real_value(j);

    } else if (json_is_string(j)
               && json_string_length(j) > 0
               && strspn(json_string_value(j), "0123456789.eE+-")
                  == json_string_length(j))
    {
        d = strtod(json_string_value(j), &end);

        if (*end != '\0') {
            d = 0;
        }
    }

    json_decref(j);

    if (!(d > 0)) {
        return v;
    }

    x = (d >= 281474976710656.0) ? (UINT64_C(1) << 48) : (uint64_t) d;
    x += (d < 281474976710656.0 && (double) x < d);

    return (x > v) ? x : v;
}


/* a usage the strict scanner refuses: jansson's reading, the last key */

static int
ref_loose(const al_llm_resp_t *r, al_llm_usage_t *u)
{
    size_t         k;
    json_t        *root, *o, *j;
    unsigned       any;
    uint64_t       x[AL_LLM_USAGE_V];
    json_error_t   err;
    double         d;
    const char    *names[AL_LLM_USAGE_V];

    static const char *const  oai[] = {
        "prompt_tokens", "completion_tokens", "total_tokens", NULL,
        "cached_tokens", NULL, NULL
    };
    static const char *const  resp[] = {
        "input_tokens", "output_tokens", "total_tokens", NULL,
        "cached_tokens", NULL, NULL
    };
    static const char *const  ant[] = {
        "input_tokens", "cache_read_input_tokens",
        "cache_creation_input_tokens", "output_tokens", NULL,
        "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"
    };

    root = json_loadb(r->usage, r->usage_len, 0, &err);

    if (!json_is_object(root)) {
        json_decref(root);
        return -1;
    }

    memcpy(names, (r->kind == AL_LLM_ANTHROPIC) ? ant
                  : (r->endpoint == AL_LLM_EP_RESPONSES) ? resp : oai,
           sizeof(names));

    any = 0;

    for (k = 0; k < AL_LLM_USAGE_V; k++) {
        x[k] = 0;

        if (names[k] == NULL) {
            continue;
        }

        o = (k < 4) ? root
            : (r->kind == AL_LLM_ANTHROPIC)
              ? json_object_get(root, "cache_creation")
            : json_object_get(root, (r->endpoint == AL_LLM_EP_RESPONSES)
                                    ? "input_tokens_details"
                                    : "prompt_tokens_details");
        j = json_is_object(o) ? json_object_get(o, names[k]) : NULL;

        if (json_is_integer(j) && json_integer_value(j) >= 0) {
            x[k] = (uint64_t) json_integer_value(j);
            x[k] = (x[k] > (UINT64_C(1) << 48)) ? (UINT64_C(1) << 48) : x[k];
            any |= (k != 4 && x[k] != 0);
        }
    }

    for (k = 0; any && k < AL_LLM_USAGE_V; k++) {
        if (names[k] == NULL || k == 4) {
            continue;
        }

        o = (k < 4) ? root : json_object_get(root, "cache_creation");
        j = json_is_object(o) ? json_object_get(o, names[k]) : NULL;
        d = 0;

        if (json_is_real(j)) {
            d = json_real_value(j);

        } else if (json_is_string(j) && json_string_length(j) > 0
                   && strspn(json_string_value(j), "0123456789.eE+-")
                      == json_string_length(j))
        {
            d = strtod(json_string_value(j), NULL);
        }

        if (d > 0 && d < 281474976710656.0 && (double) x[k] < d) {
            x[k] = (uint64_t) d + ((double) (uint64_t) d < d);
        }
    }

    json_decref(root);

    if (r->kind == AL_LLM_ANTHROPIC) {
        al_llm_usage_anthropic(x[0], x[1], x[2], x[5], x[6], x[3], u);
        return 0;
    }

    u->prompt_tokens = x[0];
    u->completion_tokens = x[1];
    u->total_tokens = x[2];
    u->cached_tokens = x[4];

    al_llm_usage_total(u);

    return 0;
}

#endif /* LLM_QUICK_REF_H */
