/*
 * The reference for the JSON answer's usage scanner (al_llm_resp_feed()):
 * the byte scanner it replaced, kept as it was, for the tests to compare
 * the captures with.  A state machine turn per token at the top level,
 * a table lookup per byte inside members, each piece taken copied as it
 * is met.  Private to tests/unit/llm_resp.c and tests/fuzz/fuzz_llm_resp.c.
 */

#ifndef LLM_RESP_REF_H
#define LLM_RESP_REF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "al_llm.h"


enum {
    REF_R_START = 0,
    REF_R_KEY,
    REF_R_COLON,
    REF_R_VALUE,
    REF_R_DONE
};

enum {
    REF_CAP_NONE = 0,
    REF_CAP_USAGE,
    REF_CAP_MODEL
};

typedef struct {
    unsigned             state;
    unsigned             depth;
    unsigned             in_str:1;
    unsigned             esc:1;
    unsigned             is_key:1;
    unsigned             key_over:1;
    unsigned             cap_over:1;
    unsigned             capture;
    char                 key[32];
    size_t               key_len;
    size_t               cap_len;
    char                 usage[AL_LLM_USAGE_MAX];
    size_t               usage_len;
    char                 model[AL_LLM_MODEL_MAX + 8];
    size_t               model_len;
} ref_resp_t;


static const unsigned char  ref_resp_struct[256] = {
    ['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1
};


/* key[0..n), decoded as a JSON reader decodes a member's name, is name */

static inline int
ref_key_is(const char *key, size_t n, const char *name)
{
    size_t    i, k;
    unsigned  cp;
    char      c, hex[5];

    k = 0;

    for (i = 0; i < n; i++) {
        c = key[i];

        if (c == '\\' && n - i >= 6 && key[i + 1] == 'u') {
            memcpy(hex, key + i + 2, 4);
            hex[4] = '\0';

            if (strspn(hex, "0123456789abcdefABCDEF") != 4) {
                return 0;
            }

            cp = (unsigned) strtoul(hex, NULL, 16);
            if (cp >= 0x80) {
                return 0;
            }

            c = (char) cp;
            i += 5;

        } else if (c == '\\') {
            if (i + 1 == n || key[i + 1] == '\0'
                || strchr("\"\\/bfnrt", key[i + 1]) == NULL)
            {
                return 0;
            }

            c = key[++i];
            c = (c == 'b') ? '\b' : (c == 'f') ? '\f' : (c == 'n') ? '\n'
                : (c == 'r') ? '\r' : (c == 't') ? '\t' : c;
        }

        if (name[k] == '\0' || name[k] != c) {
            return 0;
        }

        k++;
    }

    return name[k] == '\0';
}


static inline void
ref_resp_init(ref_resp_t *r)
{
    r->state = REF_R_START;
    r->depth = 0;
    r->in_str = 0;
    r->esc = 0;
    r->is_key = 0;
    r->key_over = 0;
    r->cap_over = 0;
    r->capture = REF_CAP_NONE;
    r->key_len = 0;
    r->cap_len = 0;
    r->usage_len = 0;
    r->model_len = 0;
}


static inline size_t
ref_str_run(const unsigned char *p, size_t i, size_t n)
{
    while (i < n && p[i] != '"' && p[i] != '\\') {
        i++;
    }

    return i;
}


static inline void
ref_resp_capture(ref_resp_t *r, const unsigned char *p, size_t n)
{
    char    *buf;
    size_t   size;

    if (r->capture == REF_CAP_USAGE) {
        buf = r->usage;
        size = sizeof(r->usage);

    } else {
        buf = r->model;
        size = sizeof(r->model);
    }

    if (r->cap_over || n > size - r->cap_len) {
        r->cap_over = 1;
        return;
    }

    memcpy(buf + r->cap_len, p, n);
    r->cap_len += n;
}


static inline void
ref_resp_end_value(ref_resp_t *r)
{
    if (r->capture == REF_CAP_USAGE) {
        r->usage_len = r->cap_over ? 0 : r->cap_len;

    } else if (r->capture == REF_CAP_MODEL) {
        r->model_len = r->cap_over ? 0 : r->cap_len;
    }

    r->capture = REF_CAP_NONE;
    r->cap_len = 0;
}


static inline size_t
ref_resp_skip(ref_resp_t *r, const unsigned char *p, size_t i, size_t len)
{
    unsigned char  c;

    while (i < len) {

        while (!ref_resp_struct[p[i]]) {
            if (++i == len) {
                return len;
            }
        }

        c = p[i++];

        switch (c) {

        case '"':
            for ( ;; ) {
                i = ref_str_run(p, i, len);

                if (i == len) {
                    r->in_str = 1;
                    return len;
                }

                if (p[i] == '"') {
                    i++;
                    break;
                }

                if (i + 1 == len) {
                    r->in_str = 1;
                    r->esc = 1;
                    return len;
                }

                i += 2;
            }
            break;

        case '{':
        case '[':
            if (r->depth < UINT32_MAX) {
                r->depth++;
            }
            break;

        default:
            if (--r->depth == 1) {
                return i;
            }
            break;
        }
    }

    return i;
}


static inline void
ref_resp_feed(ref_resp_t *r, const unsigned char *p, size_t len)
{
    size_t         i, j;
    unsigned char  c;

    i = 0;

    while (i < len && r->state != REF_R_DONE) {

        if (r->in_str) {
            j = i + r->esc;
            r->esc = 0;
            j = ref_str_run(p, j, len);

            if (j > i) {
                if (r->capture) {
                    ref_resp_capture(r, p + i, j - i);
                }

                if (r->is_key) {
                    if (r->key_len + (j - i) <= sizeof(r->key)) {
                        memcpy(r->key + r->key_len, p + i, j - i);
                        r->key_len += j - i;
                    } else {
                        r->key_over = 1;
                    }
                }

                i = j;

                if (i == len) {
                    break;
                }
            }

            c = p[i++];

            if (r->capture) {
                ref_resp_capture(r, &c, 1);
            }

            if (c == '\\') {
                r->esc = 1;

                if (r->is_key) {
                    if (r->key_len < sizeof(r->key)) {
                        r->key[r->key_len++] = '\\';
                    } else {
                        r->key_over = 1;
                    }
                }
                continue;
            }

            r->in_str = 0;

            if (r->is_key) {
                r->is_key = 0;
                r->state = REF_R_COLON;
            }

            continue;
        }

        if (r->state == REF_R_START) {
            c = p[i++];

            if (c == '{') {
                r->depth = 1;
                r->state = REF_R_KEY;

            } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                r->state = REF_R_DONE;
            }

            continue;
        }

        if (r->depth > 1) {
            j = ref_resp_skip(r, p, i, len);

            if (r->capture) {
                ref_resp_capture(r, p + i, j - i);
            }

            i = j;
            continue;
        }

        c = p[i++];

        if (r->depth == 1 && (c == ',' || c == '}')) {
            ref_resp_end_value(r);
            r->state = (c == ',') ? REF_R_KEY : REF_R_DONE;
            continue;
        }

        if (r->capture) {
            ref_resp_capture(r, &c, 1);
        }

        switch (c) {

        case '"':
            r->in_str = 1;

            if (r->depth == 1 && r->state == REF_R_KEY) {
                r->is_key = 1;
                r->key_len = 0;
                r->key_over = 0;
            }
            break;

        case '{':
        case '[':
            if (r->depth < UINT32_MAX) {
                r->depth++;
            }
            break;

        case '}':
        case ']':
            r->depth--;

            if (r->depth == 0) {
                r->state = REF_R_DONE;
            }
            break;

        case ':':
            if (r->depth == 1 && r->state == REF_R_COLON) {
                r->state = REF_R_VALUE;
                r->cap_len = 0;
                r->cap_over = 0;

                if (!r->key_over && ref_key_is(r->key, r->key_len, "usage"))
                {
                    r->capture = REF_CAP_USAGE;
                    r->usage_len = 0;

                } else if (!r->key_over
                           && ref_key_is(r->key, r->key_len, "model"))
                {
                    r->capture = REF_CAP_MODEL;
                    r->model_len = 0;
                }
            }
            break;

        default:
            break;
        }
    }
}

#endif /* LLM_RESP_REF_H */
