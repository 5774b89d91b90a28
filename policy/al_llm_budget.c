/*
 * LLM gateway: token budgets and the provider-native error bodies.
 *
 * A budget is two fixed windows, the current UTC minute and the current
 * UTC day, each a start time and a count, so it can live in shared memory
 * as plain data and every operation is a few integer steps under the
 * module's lock.  Windows only move forward: a clock stepping back keeps
 * counting in the current window rather than handing out a fresh one.
 */

#include <stdio.h>
#include <string.h>

#include "al_llm_internal.h"




typedef struct {
    const char      *openai_type;
    const char      *openai_code;
    const char      *openai_param;      /* NULL: null */
    const char      *anthropic_type;
    unsigned         status;
    const char      *message;
} al_llm_err_def_t;


static int64_t al_llm_window(int64_t now, int64_t unit);
static uint64_t al_llm_add(uint64_t a, uint64_t b);


static const al_llm_err_def_t  al_llm_errs[] = {
    { "tokens", "rate_limit_exceeded", NULL, "rate_limit_error", 429,
      "token rate limit reached for this client" },
    { "insufficient_quota", "insufficient_quota", NULL, "rate_limit_error",
      429, "token budget for today is exhausted for this client" },
    { "invalid_request_error", "model_not_allowed", "model",
      "permission_error", 403, "this model is not allowed for this client" },
    { "invalid_request_error", "endpoint_not_allowed", NULL,
      "permission_error", 403, "this endpoint is not allowed" },
    { "invalid_request_error", "invalid_request_body", NULL,
      "invalid_request_error", 400, "invalid request body" },
    { "invalid_request_error", "request_too_large", NULL,
      "request_too_large", 413, "request body too large" },
    { "permission_denied", "permission_denied", NULL, "permission_error",
      403, "request denied by the gateway policy" },
    { "invalid_request_error", "invalid_api_key", NULL,
      "authentication_error", 401, "invalid or missing API key" }
};


void
al_llm_budget_roll(al_llm_budget_t *b, int64_t now)
{
    int64_t  w;

    w = al_llm_window(now, AL_LLM_MINUTE);
    if (w > b->minute) {
        b->minute = w;
        b->minute_used = 0;
    }

    w = al_llm_window(now, AL_LLM_DAY);
    if (w > b->day) {
        b->day = w;
        b->day_used = 0;
    }
}


int
al_llm_budget_check(al_llm_budget_t *b, const al_llm_client_t *lc,
    int64_t now, uint64_t need, al_llm_quota_t *q)
{
    int64_t         reset;
    uint64_t        ml, dl, mr, dr;
    al_llm_quota_t  tmp;

    if (q == NULL) {
        q = &tmp;
    }

    memset(q, 0, sizeof(*q));

    al_llm_budget_roll(b, now);

    ml = (lc != NULL) ? lc->tokens_per_minute : 0;
    dl = (lc != NULL) ? lc->tokens_per_day : 0;

    mr = ml ? (b->minute_used >= ml ? 0 : ml - b->minute_used) : UINT64_MAX;
    dr = dl ? (b->day_used >= dl ? 0 : dl - b->day_used) : UINT64_MAX;

    /* now may lag the window start after a clock step back */

    q->minute_end = b->minute + AL_LLM_MINUTE;
    q->day_end = b->day + AL_LLM_DAY;

    reset = b->minute + AL_LLM_MINUTE - now;
    q->minute_reset = (unsigned) (reset < 1 ? 1 : reset > AL_LLM_MINUTE
                                                ? AL_LLM_MINUTE : reset);
    reset = b->day + AL_LLM_DAY - now;
    q->day_reset = (unsigned) (reset < 1 ? 1 : reset > AL_LLM_DAY
                                             ? AL_LLM_DAY : reset);

    q->minute_limit = ml;
    q->minute_remaining = mr;
    q->day_limit = dl;
    q->day_remaining = dr;

    q->over_minute = (need > mr);
    q->over_day = (need > dr);
    q->too_large = ((ml && need > ml) || (dl && need > dl));

    if (q->too_large) {
        q->retry_after = 0;

    } else if (q->over_day) {
        q->retry_after = q->day_reset;

    } else if (q->over_minute) {
        q->retry_after = q->minute_reset;
    }

    return (q->over_minute || q->over_day) ? -1 : 0;
}


unsigned
al_llm_quota_reset(int64_t end, int64_t unit, int64_t now)
{
    int64_t  reset;

    if (unit <= 0) {
        return 1;
    }

    reset = end - now;

    if (reset < 1) {
        /* the window rolled while the provider answered: the next one */
        reset = unit - ((now - end) % unit);
    }

    return (unsigned) (reset > unit ? unit : reset);
}


int
al_llm_budget_reserve(al_llm_budget_t *b, const al_llm_client_t *lc,
    int64_t now, uint64_t need, al_llm_quota_t *q)
{
    if (al_llm_budget_check(b, lc, now, need, q) != 0) {
        return -1;
    }

    al_llm_budget_charge(b, now, need);

    if (q != NULL) {
        if (q->minute_limit) {
            q->minute_remaining -= need;
        }
        if (q->day_limit) {
            q->day_remaining -= need;
        }
    }

    return 0;
}


void
al_llm_budget_charge(al_llm_budget_t *b, int64_t now, uint64_t tokens)
{
    al_llm_budget_roll(b, now);

    b->minute_used = al_llm_add(b->minute_used, tokens);
    b->day_used = al_llm_add(b->day_used, tokens);
}


void
al_llm_budget_settle(al_llm_budget_t *b, int64_t now, int64_t at,
    uint64_t reserved, uint64_t actual)
{
    al_llm_budget_roll(b, now);

    if (al_llm_window(at, AL_LLM_MINUTE) == b->minute) {
        b->minute_used -= (reserved < b->minute_used) ? reserved
                                                      : b->minute_used;
    }

    if (al_llm_window(at, AL_LLM_DAY) == b->day) {
        b->day_used -= (reserved < b->day_used) ? reserved : b->day_used;
    }

    b->minute_used = al_llm_add(b->minute_used, actual);
    b->day_used = al_llm_add(b->day_used, actual);
}


size_t
al_llm_quota_message(const al_llm_quota_t *q, uint64_t need, char *buf,
    size_t size)
{
    int  n;

    if (q->too_large) {
        n = snprintf(buf, size, "request needs about %llu tokens, more "
                     "than this client may use per %s (%llu)",
                     (unsigned long long) need,
                     (q->minute_limit && need > q->minute_limit)
                     ? "minute" : "day",
                     (unsigned long long)
                     ((q->minute_limit && need > q->minute_limit)
                      ? q->minute_limit : q->day_limit));

    } else if (q->over_day) {
        n = snprintf(buf, size, "daily token budget exhausted: %llu of "
                     "%llu tokens left, request needs about %llu; retry "
                     "in %us", (unsigned long long) q->day_remaining,
                     (unsigned long long) q->day_limit,
                     (unsigned long long) need, q->retry_after);

    } else if (q->over_minute) {
        n = snprintf(buf, size, "token rate limit reached: %llu of %llu "
                     "tokens per minute left, request needs about %llu; "
                     "retry in %us",
                     (unsigned long long) q->minute_remaining,
                     (unsigned long long) q->minute_limit,
                     (unsigned long long) need, q->retry_after);

    } else {
        n = snprintf(buf, size, "within budget");
    }

    return n < 0 ? 0 : (size_t) n;
}


al_llm_error_t
al_llm_error_from_reason(al_reason_t reason, const al_llm_quota_t *q)
{
    switch (reason) {

    case AL_REASON_MODEL:
        return AL_LLM_ERR_MODEL;

    case AL_REASON_NO_ROUTE:
    case AL_REASON_METHOD:
    case AL_REASON_PATH:
    case AL_REASON_QUERY:
        return AL_LLM_ERR_ENDPOINT;

    case AL_REASON_BODY:
    case AL_REASON_REQUEST:
        return AL_LLM_ERR_INVALID;

    case AL_REASON_BODY_TOO_LARGE:
        return AL_LLM_ERR_TOO_LARGE;

    case AL_REASON_BUDGET:
        return (q != NULL && q->over_day && !q->too_large)
               ? AL_LLM_ERR_QUOTA : AL_LLM_ERR_RATE_LIMIT;

    case AL_REASON_CLIENT_UNKNOWN:
        return AL_LLM_ERR_AUTH;

    default:
        return AL_LLM_ERR_DENIED;
    }
}


unsigned
al_llm_error_status(al_llm_error_t err)
{
    if ((unsigned) err > AL_LLM_ERR_AUTH) {
        return 403;
    }

    return al_llm_errs[err].status;
}


size_t
al_llm_error_body(al_llm_kind_t kind, al_llm_error_t err,
    const char *message, const char *request_id, char *buf, size_t size)
{
    int                      n;
    al_llm_out_t             o;
    const al_llm_err_def_t  *e;
    char                     text[AL_DETAIL_MAX + 128];

    if ((unsigned) err > AL_LLM_ERR_AUTH) {
        err = AL_LLM_ERR_DENIED;
    }

    e = &al_llm_errs[err];

    if (message == NULL || message[0] == '\0') {
        message = e->message;
    }

    al_llm_out_init(&o, buf, size);

    if (kind == AL_LLM_ANTHROPIC) {
        al_llm_out_cstr(&o, "{\"type\":\"error\",\"error\":{\"type\":\"");
        al_llm_out_cstr(&o, e->anthropic_type);
        al_llm_out_cstr(&o, "\",\"message\":");
        al_llm_out_json(&o, message, strnlen(message, AL_DETAIL_MAX));
        al_llm_out_cstr(&o, "}");

        if (request_id != NULL && request_id[0] != '\0') {
            al_llm_out_cstr(&o, ",\"request_id\":");
            al_llm_out_json(&o, request_id, strnlen(request_id, 64));
        }

        al_llm_out_cstr(&o, "}");

        return o.len;
    }

    if (request_id != NULL && request_id[0] != '\0') {
        n = snprintf(text, sizeof(text), "%.*s (request id %.64s)",
                     AL_DETAIL_MAX, message, request_id);
    } else {
        n = snprintf(text, sizeof(text), "%.*s", AL_DETAIL_MAX, message);
    }

    if (n < 0) {
        text[0] = '\0';
        n = 0;
    }

    if ((size_t) n >= sizeof(text)) {
        n = sizeof(text) - 1;
    }

    al_llm_out_cstr(&o, "{\"error\":{\"message\":");
    al_llm_out_json(&o, text, (size_t) n);
    al_llm_out_cstr(&o, ",\"type\":\"");
    al_llm_out_cstr(&o, e->openai_type);
    al_llm_out_cstr(&o, "\",\"param\":");

    if (e->openai_param != NULL) {
        al_llm_out_cstr(&o, "\"");
        al_llm_out_cstr(&o, e->openai_param);
        al_llm_out_cstr(&o, "\"");
    } else {
        al_llm_out_cstr(&o, "null");
    }

    al_llm_out_cstr(&o, ",\"code\":\"");
    al_llm_out_cstr(&o, e->openai_code);
    al_llm_out_cstr(&o, "\"}}");

    return o.len;
}


/* the start of the window of `unit` seconds that holds now */

static int64_t
al_llm_window(int64_t now, int64_t unit)
{
    int64_t  r;

    r = now % unit;
    if (r < 0) {
        r += unit;
    }

    return now - r;
}


static uint64_t
al_llm_add(uint64_t a, uint64_t b)
{
    return (a > UINT64_MAX - b) ? UINT64_MAX : a + b;
}
