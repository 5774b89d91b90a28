/*
 * LLM gateway: budgets, admission, costs and the provider-native error
 * bodies.
 *
 * A budget is fixed windows, the current UTC minute, day and month, each
 * a start time and counts (tokens and requests in the minute, tokens and
 * dollars in the day, dollars in the month), and the number of requests
 * in flight, so it can live in shared memory as plain data and every
 * operation is a few integer steps under the module's lock.  Windows only
 * move forward: a clock stepping back keeps counting in the current window
 * rather than handing out a fresh one.  Money is whole picodollars
 * (1e-12 USD): a price in USD per million tokens with six decimals is a
 * whole number of picodollars per token, so costs add up exactly.
 */

#include <stdio.h>
#include <string.h>
#include <strings.h>

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
static uint64_t al_llm_mul(uint64_t a, uint64_t b);
static uint64_t al_llm_sub(uint64_t a, uint64_t b);
static int64_t al_llm_days_from_civil(int64_t y, unsigned m, unsigned d);
static unsigned al_llm_reset(int64_t end, int64_t now, int64_t max);


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
      "authentication_error", 401, "invalid or missing API key" },
    { "requests", "rate_limit_exceeded", NULL, "rate_limit_error", 429,
      "request rate limit reached for this client" },
    { "invalid_request_error", "model_not_found", "model",
      "not_found_error", 404, "no such model for this client" },
    { "server_error", "budget_unavailable", NULL, "api_error", 503,
      "the gateway cannot keep this client's budget now; try again "
      "later" }
};


void
al_llm_budget_roll(al_llm_budget_t *b, int64_t now)
{
    int64_t  w;

    /*
     * Most calls fall in the windows of the last: nothing rolls, and the
     * two divisions are not needed to say so.  The differences are taken
     * unsigned: now before a window's start is far from under its length.
     */

    if ((uint64_t) now - (uint64_t) b->minute < AL_LLM_MINUTE
        && (uint64_t) now - (uint64_t) b->day < AL_LLM_DAY)
    {
        return;
    }

    w = al_llm_window(now, AL_LLM_MINUTE);
    if (w > b->minute) {
        b->minute = w;
        b->minute_used = 0;
        b->minute_requests = 0;
    }

    w = al_llm_window(now, AL_LLM_DAY);
    if (w <= b->day) {
        return;                     /* a month begins with a day */
    }

    b->day = w;
    b->day_used = 0;
    b->day_cost = 0;

    w = al_llm_month_start(now, NULL);
    if (w > b->month) {
        b->month = w;
        b->month_cost = 0;
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
    int   n;
    char  a[AL_LLM_USD_MAX], b[AL_LLM_USD_MAX], c[AL_LLM_USD_MAX];

    if (q->over_concurrent) {
        n = snprintf(buf, size, "too many requests in flight: this client "
                     "may have %llu at once; retry in %us",
                     (unsigned long long) q->concurrent_limit,
                     q->retry_after);
        return n < 0 ? 0 : (size_t) n;
    }

    if (q->over_requests) {
        n = snprintf(buf, size, "request rate limit reached: %llu requests "
                     "per minute; retry in %us",
                     (unsigned long long) q->requests_limit, q->retry_after);
        return n < 0 ? 0 : (size_t) n;
    }

    if (q->cost_too_large) {
        (void) al_llm_usd_format(q->cost_need, a, sizeof(a));
        (void) al_llm_usd_format((q->cost_day_limit
                                  && q->cost_need > q->cost_day_limit)
                                 ? q->cost_day_limit : q->cost_month_limit,
                                 b, sizeof(b));
        n = snprintf(buf, size, "request may cost up to $%s, more than this "
                     "client may spend per %s ($%s)", a,
                     (q->cost_day_limit && q->cost_need > q->cost_day_limit)
                     ? "day" : "month", b);
        return n < 0 ? 0 : (size_t) n;
    }

    if (q->over_cost_day || q->over_cost_month) {
        (void) al_llm_usd_format(q->over_cost_month
                                 ? q->cost_month_remaining
                                 : q->cost_day_remaining, a, sizeof(a));
        (void) al_llm_usd_format(q->over_cost_month ? q->cost_month_limit
                                 : q->cost_day_limit, b, sizeof(b));
        (void) al_llm_usd_format(q->cost_need, c, sizeof(c));
        n = snprintf(buf, size, "%s dollar budget exhausted: $%s of $%s "
                     "left, request may cost up to $%s; retry in %us",
                     q->over_cost_month ? "monthly" : "daily", a, b, c,
                     q->retry_after);
        return n < 0 ? 0 : (size_t) n;
    }

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
        if (q != NULL && (q->over_concurrent || q->over_requests)) {
            return AL_LLM_ERR_REQUESTS;
        }

        if (q != NULL && (q->over_cost_day || q->over_cost_month)) {
            return AL_LLM_ERR_QUOTA;
        }

        return (q != NULL && q->over_day && !q->too_large)
               ? AL_LLM_ERR_QUOTA : AL_LLM_ERR_RATE_LIMIT;

    case AL_REASON_CLIENT_UNKNOWN:
        return AL_LLM_ERR_AUTH;

    default:
        return AL_LLM_ERR_DENIED;
    }
}


al_llm_error_t
al_llm_error_from_route(al_reason_t reason, al_llm_endpoint_t ep)
{
    if (reason == AL_REASON_MODEL && ep == AL_LLM_EP_MODEL) {
        return AL_LLM_ERR_NOT_FOUND;
    }

    return al_llm_error_from_reason(reason, NULL);
}


unsigned
al_llm_error_status(al_llm_error_t err)
{
    if ((unsigned) err > AL_LLM_ERR_UNAVAILABLE) {
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

    if ((unsigned) err > AL_LLM_ERR_UNAVAILABLE) {
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


int
al_llm_admit(al_llm_budget_t *b, const al_llm_client_t *lc, int64_t now,
    const al_llm_amount_t *need, al_llm_quota_t *q)
{
    int             refused;
    unsigned        wait;
    uint64_t        dl, ml;
    al_llm_quota_t  tmp;

    if (q == NULL) {
        q = &tmp;
    }

    /* rolls every window, fills the token part, memsets the rest */
    refused = (al_llm_budget_check(b, lc, now, need->tokens, q) != 0);

    wait = refused ? q->retry_after : 0;

    if (lc == NULL) {
        return refused ? -1 : 0;
    }

    q->concurrent_limit = lc->max_concurrent;
    q->concurrent_active = b->active;

    if (lc->max_concurrent && b->active >= lc->max_concurrent) {
        q->over_concurrent = 1;
        refused = 1;
        wait = wait > 1 ? wait : 1;
    }

    q->requests_limit = lc->requests_per_minute;
    q->requests_remaining = UINT64_MAX;
    q->requests_reset = q->minute_reset;

    if (lc->requests_per_minute) {
        q->requests_remaining = al_llm_sub(lc->requests_per_minute,
                                           b->minute_requests);

        if (q->requests_remaining == 0) {
            q->over_requests = 1;
            refused = 1;
            wait = wait > q->minute_reset ? wait : q->minute_reset;
        }
    }

    dl = lc->cost_per_day;
    ml = lc->cost_per_month;

    q->cost_need = need->cost;
    q->cost_day_limit = dl;
    q->cost_month_limit = ml;
    q->cost_day_remaining = dl ? al_llm_sub(dl, b->day_cost) : UINT64_MAX;
    q->cost_month_remaining = ml ? al_llm_sub(ml, b->month_cost)
                                 : UINT64_MAX;

    /* the month's end: only a monthly budget waits for it */

    q->month_end = 0;
    q->month_reset = 0;

    if (ml) {
        (void) al_llm_month_start(now, &q->month_end);

        if (q->month_end < b->month) {
            /* a clock stepped back: the month counted is the newer one */
            (void) al_llm_month_start(b->month, &q->month_end);
        }

        q->month_reset = al_llm_reset(q->month_end, now, 31 * AL_LLM_DAY);
    }

    q->cost_too_large = ((dl && need->cost > dl) || (ml && need->cost > ml));

    if (need->cost > q->cost_day_remaining) {
        q->over_cost_day = 1;
        refused = 1;
        wait = wait > q->day_reset ? wait : q->day_reset;
    }

    if (need->cost > q->cost_month_remaining) {
        q->over_cost_month = 1;
        refused = 1;
        wait = wait > q->month_reset ? wait : q->month_reset;
    }

    if (!refused) {
        q->retry_after = 0;

        /*
         * The windows never move back: after a clock stepped back, the
         * reservation goes to the current windows, later than now, and
         * al_llm_finish() must take it back from there.
         */

        q->at = (now < b->minute) ? b->minute : now;

        b->active++;
        b->minute_requests = al_llm_add(b->minute_requests, 1);
        b->minute_used = al_llm_add(b->minute_used, need->tokens);
        b->day_used = al_llm_add(b->day_used, need->tokens);
        b->day_cost = al_llm_add(b->day_cost, need->cost);
        b->month_cost = al_llm_add(b->month_cost, need->cost);

        if (q->minute_limit) {
            q->minute_remaining -= need->tokens;
        }
        if (q->day_limit) {
            q->day_remaining -= need->tokens;
        }
        if (q->requests_limit) {
            q->requests_remaining--;
        }
        if (dl) {
            q->cost_day_remaining -= need->cost;
        }
        if (ml) {
            q->cost_month_remaining -= need->cost;
        }

        return 0;
    }

    q->retry_after = (q->too_large || q->cost_too_large) ? 0 : wait;

    return -1;
}


void
al_llm_finish(al_llm_budget_t *b, int64_t now, int64_t at,
    const al_llm_amount_t *reserved, const al_llm_amount_t *actual,
    unsigned slot)
{
    unsigned  same_day;

    al_llm_budget_settle(b, now, at, reserved->tokens, actual->tokens);

    same_day = (al_llm_window(at, AL_LLM_DAY) == b->day);

    if (same_day) {
        b->day_cost = al_llm_sub(b->day_cost, reserved->cost);
    }

    /*
     * b->month is the month of b->day (al_llm_budget_roll() sets them
     * together), so the same day is the same month without the calendar.
     */

    if (same_day || al_llm_month_start(at, NULL) == b->month) {
        b->month_cost = al_llm_sub(b->month_cost, reserved->cost);
    }

    b->day_cost = al_llm_add(b->day_cost, actual->cost);
    b->month_cost = al_llm_add(b->month_cost, actual->cost);

    if (slot && b->active > 0) {
        b->active--;
    }
}


int
al_llm_budget_idle(const al_llm_budget_t *b, int64_t now)
{
    al_llm_budget_t  c;

    c = *b;
    al_llm_budget_roll(&c, now);

    return c.minute_used == 0 && c.day_used == 0 && c.minute_requests == 0
           && c.day_cost == 0 && c.month_cost == 0 && c.active == 0;
}


int
al_llm_client_limited(const al_llm_client_t *lc)
{
    return lc != NULL
           && (lc->tokens_per_minute || lc->tokens_per_day
               || lc->requests_per_minute || lc->max_concurrent
               || lc->cost_per_day || lc->cost_per_month);
}


int
al_llm_client_priced(const al_llm_client_t *lc)
{
    return lc != NULL && (lc->cost_per_day || lc->cost_per_month);
}


int
al_llm_beta_priced(const char *v, size_t len)
{
    int       rc;
    size_t    i, j, k;
    unsigned  c;

    static const al_str_t  priced[] = {
        { "context-1m", sizeof("context-1m") - 1 },
        { "fast-mode", sizeof("fast-mode") - 1 },
        { NULL, 0 }
    };

    static const int  kind[] = { AL_LLM_BETA_LONG, AL_LLM_BETA_OTHER };

    /*
     * A value that is not a plain list of beta names (letters, digits,
     * '-', '_', '.', separated by ',' and SP or HTAB) cannot be read
     * here as the provider's side reads it: LiteLLM's proxy strips each
     * item as Python does (VT, FF, NBSP, ... go too) and takes a JSON
     * list as well (["context-1m-..."], escapes and all).  Taken for a
     * priced one.
     */

    for (i = 0; i < len; i++) {
        c = (unsigned char) v[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
              || c == ',' || c == ' ' || c == '\t'))
        {
            return AL_LLM_BETA_OTHER;
        }
    }

    rc = 0;

    for (i = 0; i < len; i = j + 1) {
        while (i < len && (v[i] == ' ' || v[i] == '\t')) {
            i++;
        }

        for (j = i; j < len && v[j] != ','; j++) { /* void */ }

        for (k = 0; priced[k].data != NULL; k++) {
            if (j - i >= priced[k].len
                && strncasecmp(v + i, priced[k].data, priced[k].len) == 0)
            {
                rc |= kind[k];
            }
        }
    }

    return rc;
}


const al_llm_price_t *
al_llm_price(const al_llm_t *llm, const char *model, size_t len)
{
    size_t  i;

    for (i = 0; llm != NULL && i < llm->nprices; i++) {
        if (llm->prices[i].model.len == len
            && memcmp(llm->prices[i].model.data, model, len) == 0)
        {
            return &llm->prices[i];
        }
    }

    return NULL;
}


const al_llm_price_t *
al_llm_price_tier(const al_llm_price_t *price, uint64_t input)
{
    if (price != NULL && price->long_context != NULL
        && input > price->above_input_tokens)
    {
        return price->long_context;
    }

    return price;
}


uint64_t
al_llm_cost(const al_llm_price_t *price, const al_llm_usage_t *u)
{
    uint64_t  cached, uncached, write, write_1h, c;

    if (price == NULL) {
        return 0;
    }

    price = al_llm_price_tier(price, u->prompt_tokens);

    cached = u->cached_tokens < u->prompt_tokens ? u->cached_tokens
                                                 : u->prompt_tokens;
    uncached = u->prompt_tokens - cached;

    c = al_llm_mul(cached, price->cached_input);

    if (u->cache_write_tokens != 0) {
        /* prompt-cache writes (Anthropic), a part of the uncached input */

        write = u->cache_write_tokens < uncached ? u->cache_write_tokens
                                                 : uncached;
        write_1h = u->cache_write_1h_tokens < write
                   ? u->cache_write_1h_tokens : write;
        uncached -= write;

        c = al_llm_add(c, al_llm_mul(write - write_1h, price->cache_write));
        c = al_llm_add(c, al_llm_mul(write_1h, price->cache_write_1h));
    }

    c = al_llm_add(c, al_llm_mul(uncached, price->input));
    c = al_llm_add(c, al_llm_mul(u->completion_tokens, price->output));

    return c;
}


uint64_t
al_llm_cost_need(const al_llm_price_t *price, int cache, uint64_t input,
    uint64_t output)
{
    uint64_t  in;

    if (price == NULL) {
        return 0;
    }

    /*
     * The estimate counts four bytes of text a token; a token is at
     * least a byte, so the prompt may count up to four times as many.
     * A prompt that may be above the threshold is reserved at the
     * long_context prices: reserved at the model's own, a call could
     * spend past the budget that admitted it, and calls admitted at
     * once each as much.
     */

    price = al_llm_price_tier(price, (input > UINT64_MAX / 4)
                                     ? UINT64_MAX : input * 4);

    /*
     * A request that asks for the prompt cache may have any input token
     * written to it, at a price that may be above the input price; the
     * cached price never is (the policy checks).
     */

    in = price->input;

    if (cache && price->cache_write > in) {
        in = price->cache_write;
    }

    if (cache && price->cache_write_1h > in) {
        in = price->cache_write_1h;
    }

    return al_llm_add(al_llm_mul(input, in),
                      al_llm_mul(output, price->output));
}


void
al_llm_cost_guess(const al_llm_price_t *price, int cache, al_llm_usage_t *u)
{
    price = al_llm_price_tier(price, u->prompt_tokens);

    if (price == NULL || !cache
        || (price->input >= price->cache_write
            && price->input >= price->cache_write_1h))
    {
        return;
    }

    u->cache_write_tokens = u->prompt_tokens;

    if (price->cache_write_1h >= price->cache_write) {
        u->cache_write_1h_tokens = u->prompt_tokens;
    }
}


/*
 * Written by hand, not with snprintf() (two calls cost about 2,000
 * instructions, as much as the rest of a priced usage line): the whole
 * dollars from the end of a scratch buffer, then the twelve digits of
 * picodollars less their trailing zeros; cut to size as snprintf cuts.
 */

size_t
al_llm_usd_format(uint64_t pico, char *buf, size_t size)
{
    char      tmp[AL_LLM_USD_MAX], *p;
    size_t    n, i;
    uint64_t  whole, f;

    whole = pico / AL_LLM_USD;
    f = pico % AL_LLM_USD;

    /* at most 8 digits (UINT64_MAX / AL_LLM_USD), then '.' and 12 */

    p = al_llm_dec_back(tmp + 20, whole);

    n = (size_t) (tmp + 20 - p);
    memmove(tmp, p, n);

    if (f != 0) {
        tmp[n] = '.';

        for (i = 12; i > 0; i--) {
            tmp[n + i] = (char) ('0' + f % 10);
            f /= 10;
        }

        n += 13;

        while (tmp[n - 1] == '0') {
            n--;
        }
    }

    if (size != 0) {
        i = n < size ? n : size - 1;
        memcpy(buf, tmp, i);
        buf[i] = '\0';
    }

    return n;
}


int
al_llm_decimal_parse(const char *s, size_t len, unsigned scale,
    uint64_t max, uint64_t *out)
{
    size_t    i, k;
    unsigned  j;
    uint64_t  v, d;

    if (len == 0 || scale > 12 || s[0] < '0' || s[0] > '9') {
        return -1;
    }

    v = 0;

    for (i = 0; i < len && s[i] != '.'; i++) {
        if (s[i] < '0' || s[i] > '9' || i >= 19) {
            return -1;
        }
        v = v * 10 + (uint64_t) (s[i] - '0');
    }

    for (j = 0; j < scale; j++) {
        if (v > UINT64_MAX / 10) {
            return -1;
        }
        v *= 10;
    }

    /* the fraction: digits past the scale may only be zeros */

    for (k = 1, i++; i < len; i++, k++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }

        if (k > scale) {
            if (s[i] != '0') {
                return -1;
            }
            continue;
        }

        d = (uint64_t) (s[i] - '0');

        for (j = (unsigned) k; j < scale; j++) {
            d *= 10;
        }

        if (v > UINT64_MAX - d) {
            return -1;
        }

        v += d;
    }

    if (v > max) {
        return -1;
    }

    *out = v;

    return 0;
}


int64_t
al_llm_month_start(int64_t now, int64_t *end)
{
    int64_t   days, y;
    unsigned  m, d;

    days = now / AL_LLM_DAY;
    if (now % AL_LLM_DAY < 0) {
        days--;
    }

    al_llm_civil(days, &y, &m, &d);

    if (end != NULL) {
        *end = (m == 12) ? al_llm_days_from_civil(y + 1, 1, 1) * AL_LLM_DAY
                         : al_llm_days_from_civil(y, m + 1, 1) * AL_LLM_DAY;
    }

    return al_llm_days_from_civil(y, m, 1) * AL_LLM_DAY;
}


/* the civil date of a day count since 1970-01-01 (proleptic Gregorian) */

void
al_llm_civil(int64_t days, int64_t *year, unsigned *month, unsigned *day)
{
    int64_t  z, era, doe, yoe, y, doy, mp;

    z = days + 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;

    *day = (unsigned) (doy - (153 * mp + 2) / 5 + 1);
    *month = (unsigned) (mp < 10 ? mp + 3 : mp - 9);
    *year = (*month <= 2) ? y + 1 : y;
}


/* the day count of a civil date */

static int64_t
al_llm_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t   era, yoe, doy, doe;

    if (m <= 2) {
        y--;
    }

    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

    return era * 146097 + doe - 719468;
}


/* seconds from now to end, 1 to max */

static unsigned
al_llm_reset(int64_t end, int64_t now, int64_t max)
{
    int64_t  r;

    r = end - now;

    return (unsigned) (r < 1 ? 1 : r > max ? max : r);
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


static uint64_t
al_llm_mul(uint64_t a, uint64_t b)
{
    return (b != 0 && a > UINT64_MAX / b) ? UINT64_MAX : a * b;
}


static uint64_t
al_llm_sub(uint64_t a, uint64_t b)
{
    return (a > b) ? a - b : 0;
}
