/*
 * Unit tests for the LLM gateway's admission and cost arithmetic
 * (al_llm_budget.c) and the policy fields behind them: requests per
 * minute, requests in flight, prices, dollar budgets.
 */

#include <stdint.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


#define DAY0   INT64_C(1720051200)      /* 2024-07-04T00:00:00Z */


static void test_decimal(void);
static void test_usd_format(void);
static void test_usd_printf(void);
static void test_month(void);
static void test_cost(void);
static void test_admit_requests(void);
static void test_admit_concurrent(void);
static void test_admit_cost(void);
static void test_admit_clock_back(void);
static void test_errors(void);
static void test_policy(void);
static void test_long_context(void);
static al_policy_t *load(const char *yaml, al_error_t *err);
static int error_is(const char *yaml, const char *want);


int
main(void)
{
    test_decimal();
    test_usd_format();
    test_month();
    test_cost();
    test_admit_requests();
    test_admit_concurrent();
    test_admit_cost();
    test_admit_clock_back();
    test_errors();
    test_policy();
    test_long_context();

    return tap_done();
}


static void
test_decimal(void)
{
    uint64_t  v;

    tap_ok(al_llm_decimal_parse("0.15", 4, 6, UINT64_MAX, &v) == 0
           && v == 150000, "0.15 at scale 6 is 150000");
    tap_ok(al_llm_decimal_parse("2", 1, 6, UINT64_MAX, &v) == 0
           && v == 2000000, "a whole number");
    tap_ok(al_llm_decimal_parse("3.", 2, 2, UINT64_MAX, &v) == 0
           && v == 300, "a trailing dot");
    tap_ok(al_llm_decimal_parse("0.075000", 8, 6, UINT64_MAX, &v) == 0
           && v == 75000, "zeros past the scale are fine... ");
    tap_ok(al_llm_decimal_parse("0.0750001", 9, 6, UINT64_MAX, &v) == -1,
           "...other digits are not");
    tap_ok(al_llm_decimal_parse("1.5", 3, 12, UINT64_MAX, &v) == 0
           && v == UINT64_C(1500000000000), "dollars to picodollars");
    tap_ok(al_llm_decimal_parse("18446744.073709551615", 21, 12,
                                UINT64_MAX, &v) == 0 && v == UINT64_MAX,
           "the largest picodollar amount");
    tap_ok(al_llm_decimal_parse("18446744.073709551616", 21, 12,
                                UINT64_MAX, &v) == -1, "one more overflows");
    tap_ok(al_llm_decimal_parse("99999999999999999999", 20, 0, UINT64_MAX,
                                &v) == -1, "too many digits");
    tap_ok(al_llm_decimal_parse("-1", 2, 6, UINT64_MAX, &v) == -1
           && al_llm_decimal_parse("+1", 2, 6, UINT64_MAX, &v) == -1
           && al_llm_decimal_parse("1e3", 3, 6, UINT64_MAX, &v) == -1
           && al_llm_decimal_parse(".5", 2, 6, UINT64_MAX, &v) == -1
           && al_llm_decimal_parse("1.2.3", 5, 6, UINT64_MAX, &v) == -1
           && al_llm_decimal_parse("", 0, 6, UINT64_MAX, &v) == -1
           && al_llm_decimal_parse("0x10", 4, 6, UINT64_MAX, &v) == -1,
           "signs, exponents, bare fractions, junk refused");
    tap_ok(al_llm_decimal_parse("10", 2, 0, 9, &v) == -1,
           "over max refused");
}


static void
test_usd_format(void)
{
    char  buf[AL_LLM_USD_MAX];

    al_llm_usd_format(0, buf, sizeof(buf));
    tap_is_str(buf, "0", "zero");
    al_llm_usd_format(UINT64_C(150000000), buf, sizeof(buf));
    tap_is_str(buf, "0.00015", "a fraction, trailing zeros dropped");
    al_llm_usd_format(UINT64_C(12500000000000), buf, sizeof(buf));
    tap_is_str(buf, "12.5", "dollars and cents");
    al_llm_usd_format(1, buf, sizeof(buf));
    tap_is_str(buf, "0.000000000001", "one picodollar");
    tap_ok(al_llm_usd_format(UINT64_MAX, buf, sizeof(buf))
           == strlen("18446744.073709551615")
           && strcmp(buf, "18446744.073709551615") == 0,
           "the largest amount fits AL_LLM_USD_MAX");
    test_usd_printf();
}


/* the printf() formatting it replaces, as the reference */

static size_t
usd_printf(uint64_t pico, char *buf, size_t size)
{
    int       n;
    char      frac[16];
    size_t    len;
    uint64_t  f;

    f = pico % AL_LLM_USD;

    if (f == 0) {
        n = snprintf(buf, size, "%llu",
                     (unsigned long long) (pico / AL_LLM_USD));
        return n < 0 ? 0 : (size_t) n;
    }

    (void) snprintf(frac, sizeof(frac), "%012llu", (unsigned long long) f);

    len = 12;
    while (len > 1 && frac[len - 1] == '0') {
        len--;
    }

    n = snprintf(buf, size, "%llu.%.*s",
                 (unsigned long long) (pico / AL_LLM_USD), (int) len, frac);

    return n < 0 ? 0 : (size_t) n;
}


static void
test_usd_printf(void)
{
    char      a[AL_LLM_USD_MAX], b[AL_LLM_USD_MAX], msg[160];
    size_t    na, nb, size;
    uint64_t  v, x;
    unsigned  i, k, bad;

    bad = 0;
    x = UINT64_C(0x9e3779b97f4a7c15);

    for (i = 0; i < 200000; i++) {

        /* random amounts of every magnitude, round ones, and the edges */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;

        switch (i % 4) {
        case 0:
            v = x;
            break;
        case 1:
            v = x >> (x % 64);
            break;
        case 2:
            v = (x % 100000) * (uint64_t) (x % 3 ? 1000000 : 1000000000);
            break;
        default:
            v = (i / 4 < 64) ? (UINT64_C(1) << (i / 4)) - (i % 8 == 3)
                             : UINT64_MAX - (i / 4 - 64);
        }

        for (k = 0; k < 2; k++) {
            size = k ? (size_t) (x % AL_LLM_USD_MAX) : sizeof(a);
            memset(a, 'x', sizeof(a));
            memset(b, 'x', sizeof(b));
            na = al_llm_usd_format(v, a, size);
            nb = usd_printf(v, b, size);

            if (na != nb || memcmp(a, b, sizeof(a)) != 0) {
                if (bad++ < 5) {
                    (void) snprintf(msg, sizeof(msg), "%llu (size %zu): "
                                    "\"%.*s\" %zu, printf \"%.*s\" %zu",
                                    (unsigned long long) v, size,
                                    (int) sizeof(a), a, na,
                                    (int) sizeof(b), b, nb);
                    tap_diag("differs: ", msg);
                }
            }
        }
    }

    tap_ok(bad == 0, "dollars as printf() writes them, 400,000 amounts "
           "and buffer sizes");
}


static void
test_month(void)
{
    int64_t  end;

    tap_ok(al_llm_month_start(DAY0 + 3600, &end) == INT64_C(1719792000)
           && end == INT64_C(1722470400),
           "July 2024: from 07-01 to 08-01 UTC");
    tap_ok(al_llm_month_start(INT64_C(1709164800), &end)
           == INT64_C(1706745600) && end == INT64_C(1709251200),
           "2024-02-29 is in a 29-day February");
    tap_ok(al_llm_month_start(INT64_C(1735689599), &end)
           == INT64_C(1733011200) && end == INT64_C(1735689600),
           "the last second of December rolls into January");
    tap_ok(al_llm_month_start(INT64_C(1735689600), NULL)
           == INT64_C(1735689600), "a month starts at its first second");
    tap_ok(al_llm_month_start(0, &end) == 0 && end == 2678400,
           "the epoch");
}


static void
test_cost(void)
{
    al_llm_usage_t  u;
    al_llm_price_t  p;

    memset(&p, 0, sizeof(p));
    p.input = 2500000;          /* $2.50 per million */
    p.cached_input = 1250000;
    p.output = 10000000;

    memset(&u, 0, sizeof(u));
    u.prompt_tokens = 1000;
    u.cached_tokens = 400;
    u.completion_tokens = 200;

    /* 600 * 2.5e-6 + 400 * 1.25e-6 + 200 * 1e-5 = 0.0015+0.0005+0.002 */
    tap_ok(al_llm_cost(&p, &u) == UINT64_C(4000000000),
           "cost: uncached, cached and output at their prices");
    tap_ok(al_llm_cost_need(&p, 1, 1000, 200) == UINT64_C(4500000000),
           "worst case: all input uncached");
    tap_ok(al_llm_cost(NULL, &u) == 0 && al_llm_cost_need(NULL, 1, 5, 5) == 0,
           "no price, no cost");

    u.cached_tokens = 5000;
    tap_ok(al_llm_cost(&p, &u) == UINT64_C(1250000000 + 2000000000),
           "cached over prompt counts as all cached");

    u.prompt_tokens = UINT64_MAX;
    tap_ok(al_llm_cost(&p, &u) == UINT64_MAX, "saturates, never wraps");

    /* a million calls of 7 tokens at $0.15/M sum exactly */
    {
        uint64_t  sum, i;

        p.input = 150000;
        memset(&u, 0, sizeof(u));
        u.prompt_tokens = 7;
        sum = 0;
        for (i = 0; i < 1000000; i++) {
            sum += al_llm_cost(&p, &u);
        }
        tap_ok(sum == UINT64_C(1050000000000),
               "a million small calls add up to exactly $1.05");
    }
}


static void
test_admit_requests(void)
{
    al_llm_budget_t   b;
    al_llm_client_t   lc;
    al_llm_quota_t    q;
    al_llm_amount_t   need, zero;

    memset(&b, 0, sizeof(b));
    memset(&lc, 0, sizeof(lc));
    memset(&zero, 0, sizeof(zero));
    lc.requests_per_minute = 2;
    need = zero;

    tap_ok(al_llm_admit(&b, &lc, DAY0 + 10, &need, &q) == 0
           && q.requests_remaining == 1 && q.requests_limit == 2,
           "rpm: first request admitted, one left");
    tap_ok(al_llm_admit(&b, &lc, DAY0 + 11, &need, &q) == 0
           && q.requests_remaining == 0, "second admitted");
    tap_ok(al_llm_admit(&b, &lc, DAY0 + 12, &need, &q) == -1
           && q.over_requests && q.retry_after == 48
           && al_llm_error_from_reason(AL_REASON_BUDGET, &q)
              == AL_LLM_ERR_REQUESTS,
           "third refused until the minute rolls, as a requests error");
    tap_ok(b.minute_requests == 2 && b.active == 2,
           "a refused request charges nothing");

    al_llm_finish(&b, DAY0 + 20, DAY0 + 10, &zero, &zero, 1);
    tap_ok(al_llm_admit(&b, &lc, DAY0 + 21, &need, &q) == -1,
           "finishing a request does not give back its rate");

    tap_ok(al_llm_admit(&b, &lc, DAY0 + 60, &need, &q) == 0
           && q.requests_remaining == 1, "a new minute admits again");
}


/*
 * A clock that jumped ahead steps back: the windows stay where they are,
 * the reservations of calls admitted meanwhile go to them, and finishing
 * the calls takes the reservations back from there, not from the windows
 * of the earlier time, which are gone.
 */

static void
test_admit_clock_back(void)
{
    int64_t           aug1, at;
    al_llm_budget_t   b;
    al_llm_client_t   lc;
    al_llm_quota_t    q;
    al_llm_amount_t   need, used;
    int               i, ok;

    memset(&b, 0, sizeof(b));
    memset(&lc, 0, sizeof(lc));
    lc.tokens_per_minute = 100;
    lc.tokens_per_day = 1000;
    lc.cost_per_day = 1000;
    lc.cost_per_month = 5000;

    need.tokens = 40;
    need.cost = 400;
    used.tokens = 2;
    used.cost = 20;

    tap_ok(al_llm_admit(&b, &lc, DAY0 + 3600, &need, &q) == 0
           && q.at == DAY0 + 3600, "admitted at now: counted at now");
    al_llm_finish(&b, DAY0 + 3601, q.at, &need, &used, 1);

    /* the clock steps back an hour: ten calls, each finished */

    ok = 1;

    for (i = 0; i < 10; i++) {
        if (al_llm_admit(&b, &lc, DAY0 + i, &need, &q) != 0
            || q.at != DAY0 + 3600)
        {
            ok = 0;
            break;
        }

        al_llm_finish(&b, DAY0 + i, q.at, &need, &used, 1);
    }

    tap_ok(ok, "a clock stepped back: ten calls admitted, each counted "
           "in the windows it went to");
    tap_ok(b.minute_used == 22 && b.day_used == 22,
           "their token reservations are taken back");
    tap_ok(b.day_cost == 220 && b.month_cost == 220 && b.active == 0,
           "their cost reservations too");

    /* a month's first minute, then back into the month before */

    aug1 = INT64_C(1722470400);         /* 2024-08-01T00:00:00Z */

    memset(&b, 0, sizeof(b));

    tap_ok(al_llm_admit(&b, &lc, aug1 + 10, &need, &q) == 0,
           "admitted in a month's first minute");
    al_llm_finish(&b, aug1 + 11, q.at, &need, &used, 1);

    tap_ok(al_llm_admit(&b, &lc, aug1 - 10, &need, &q) == 0,
           "the clock back in the month before: admitted");
    at = q.at;
    al_llm_finish(&b, aug1 - 9, at, &need, &used, 1);

    tap_ok(at == aug1 && b.minute_used == 4 && b.day_used == 4
           && b.day_cost == 40 && b.month_cost == 40,
           "its reservation is taken back from the new month's windows");
}


static void
test_admit_concurrent(void)
{
    al_llm_budget_t   b;
    al_llm_client_t   lc;
    al_llm_quota_t    q;
    al_llm_amount_t   need, zero;

    memset(&b, 0, sizeof(b));
    memset(&lc, 0, sizeof(lc));
    memset(&zero, 0, sizeof(zero));
    lc.max_concurrent = 2;
    lc.tokens_per_minute = 100;

    need.tokens = 10;
    need.cost = 0;

    tap_ok(al_llm_admit(&b, &lc, DAY0, &need, &q) == 0
           && al_llm_admit(&b, &lc, DAY0, &need, &q) == 0
           && b.active == 2 && b.minute_used == 20,
           "two in flight, tokens reserved for both");
    tap_ok(al_llm_admit(&b, &lc, DAY0, &need, &q) == -1
           && q.over_concurrent && q.retry_after == 1
           && q.concurrent_active == 2 && b.minute_used == 20,
           "a third refused, retry in 1s, nothing charged");

    al_llm_finish(&b, DAY0 + 1, DAY0, &need, &zero, 1);
    tap_ok(b.active == 1 && b.minute_used == 10,
           "finishing gives back the place and the unused tokens");
    tap_ok(al_llm_admit(&b, &lc, DAY0 + 1, &need, &q) == 0,
           "then a third is admitted");

    al_llm_finish(&b, DAY0 + 2, DAY0, &need, &zero, 1);
    al_llm_finish(&b, DAY0 + 2, DAY0, &need, &zero, 1);
    al_llm_finish(&b, DAY0 + 2, DAY0, &need, &zero, 1);
    tap_ok(b.active == 0, "more finishes than admissions never underflow");

    tap_ok(al_llm_budget_idle(&b, DAY0 + AL_LLM_DAY) == 1,
           "a budget with nothing in flight and nothing used is idle");
    (void) al_llm_admit(&b, &lc, DAY0 + 3, &need, &q);
    tap_ok(al_llm_budget_idle(&b, DAY0 + 3 + 2 * AL_LLM_DAY) == 0,
           "one still in flight days later keeps it");
}


static void
test_admit_cost(void)
{
    al_llm_budget_t   b;
    al_llm_client_t   lc;
    al_llm_quota_t    q;
    al_llm_amount_t   need, actual;
    char              msg[256];
    int64_t           month_end;

    memset(&b, 0, sizeof(b));
    memset(&lc, 0, sizeof(lc));
    lc.cost_per_day = 1 * AL_LLM_USD;
    lc.cost_per_month = 3 * AL_LLM_USD / 2;

    need.tokens = 0;
    need.cost = 6 * AL_LLM_USD / 10;

    tap_ok(al_llm_admit(&b, &lc, DAY0, &need, &q) == 0
           && q.cost_day_remaining == 4 * AL_LLM_USD / 10
           && q.cost_month_remaining == 9 * AL_LLM_USD / 10,
           "$0.60 worst case reserved from $1/day and $1.50/month");
    tap_ok(al_llm_admit(&b, &lc, DAY0, &need, &q) == -1
           && q.over_cost_day && !q.over_cost_month
           && q.retry_after == AL_LLM_DAY
           && al_llm_error_from_reason(AL_REASON_BUDGET, &q)
              == AL_LLM_ERR_QUOTA,
           "another $0.60 does not fit the day: quota, retry tomorrow");

    (void) al_llm_quota_message(&q, 0, msg, sizeof(msg));
    tap_is_str(msg, "daily dollar budget exhausted: $0.4 of $1 left, "
               "request may cost up to $0.6; retry in 86400s",
               "the message says it in dollars");

    actual.tokens = 0;
    actual.cost = AL_LLM_USD / 10;
    al_llm_finish(&b, DAY0 + 5, DAY0, &need, &actual, 1);
    tap_ok(b.day_cost == AL_LLM_USD / 10 && b.month_cost == AL_LLM_USD / 10,
           "settled at the real $0.10");

    tap_ok(al_llm_admit(&b, &lc, DAY0 + 6, &need, &q) == 0,
           "now $0.60 fits again");
    actual.cost = 6 * AL_LLM_USD / 10;
    al_llm_finish(&b, DAY0 + 7, DAY0 + 6, &need, &actual, 1);

    /* the next day: the day is fresh, the month has $0.80 left */
    need.cost = 9 * AL_LLM_USD / 10;
    tap_ok(al_llm_admit(&b, &lc, DAY0 + AL_LLM_DAY, &need, &q) == -1
           && !q.over_cost_day && q.over_cost_month
           && q.cost_month_remaining == 8 * AL_LLM_USD / 10,
           "next day: $0.90 fits the day but not the month");

    (void) al_llm_month_start(DAY0, &month_end);
    tap_ok(q.retry_after == (unsigned) (month_end - DAY0 - AL_LLM_DAY)
           && q.month_end == month_end,
           "retry when the UTC month rolls");

    tap_ok(al_llm_admit(&b, &lc, month_end, &need, &q) == 0,
           "the new month admits it");

    /* a request that costs more than a whole budget can never fit */
    need.cost = 2 * AL_LLM_USD;
    tap_ok(al_llm_admit(&b, &lc, month_end, &need, &q) == -1
           && q.cost_too_large && q.retry_after == 0,
           "more than the whole budget: refused without a retry time");

    (void) al_llm_quota_message(&q, 0, msg, sizeof(msg));
    tap_is_str(msg, "request may cost up to $2, more than this client may "
               "spend per day ($1)", "too large, said so");

    /* settling after the day rolled: the old reservation is not taken
       from the new day */
    memset(&b, 0, sizeof(b));
    need.cost = AL_LLM_USD / 2;
    (void) al_llm_admit(&b, &lc, DAY0 + AL_LLM_DAY - 1, &need, &q);
    actual.cost = AL_LLM_USD / 4;
    al_llm_finish(&b, DAY0 + AL_LLM_DAY + 1, DAY0 + AL_LLM_DAY - 1, &need,
                  &actual, 1);
    tap_ok(b.day_cost == AL_LLM_USD / 4
           && b.month_cost == AL_LLM_USD / 4,
           "a call across midnight: the new day takes the actual only");
}


static void
test_errors(void)
{
    size_t  n;
    char    buf[AL_LLM_ERROR_MAX];

    n = al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_REQUESTS, "slow down",
                          "rid1", buf, sizeof(buf));
    tap_ok(n == strlen(buf)
           && strstr(buf, "\"type\":\"requests\"") != NULL
           && strstr(buf, "\"code\":\"rate_limit_exceeded\"") != NULL
           && al_llm_error_status(AL_LLM_ERR_REQUESTS) == 429,
           "openai: a requests rate limit error, 429");

    (void) al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_REQUESTS, NULL,
                             NULL, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"type\":\"rate_limit_error\"") != NULL,
           "anthropic: rate_limit_error");

    (void) al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_UNAVAILABLE, NULL,
                             "rid2", buf, sizeof(buf));
    tap_ok(strstr(buf, "\"code\":\"budget_unavailable\"") != NULL
           && strstr(buf, "try again later (request id rid2)") != NULL
           && al_llm_error_status(AL_LLM_ERR_UNAVAILABLE) == 503,
           "openai: no room for the budget, 503 budget_unavailable");

    (void) al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_UNAVAILABLE, NULL,
                             NULL, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"type\":\"api_error\"") != NULL,
           "anthropic: api_error");
}


#define POLICY_HEAD                                                         \
    "version: 1\n"                                                          \
    "clients:\n"                                                            \
    "  agent: { unix_uid: 1000 }\n"                                         \
    "  worker: { unix_uid: 1001 }\n"                                        \
    "secrets:\n"                                                            \
    "  k: { file: /run/credentials/airlock/k }\n"                           \
    "llm:\n"                                                                \
    "  - name: oa\n"                                                        \
    "    prefix: /v1/proxy/oa\n"                                            \
    "    provider: openai\n"                                                \
    "    upstream: https://api.openai.com/v1\n"                             \
    "    secret: k\n"                                                       \
    "    models: [m1, m2]\n"

#define POLICY_TAIL                                                         \
    "alerts:\n"                                                             \
    "  deny: { threshold: 3, window: 60s }\n"


static void
test_policy(void)
{
    al_error_t             err;
    al_policy_t           *p;
    const al_llm_t        *l;
    const al_llm_price_t  *pr;

    p = load(POLICY_HEAD
             "    prices:\n"
             "      m1: { input: 0.15, cached_input: 0.075, output: 0.6 }\n"
             "      m2: { input: 2, output: 8 }\n"
             "    clients:\n"
             "      agent: { requests_per_minute: 60, "
             "max_concurrent_requests: 4, usd_per_day: 2.5, "
             "usd_per_month: 40 }\n"
             "      worker: {}\n"
             POLICY_TAIL, &err);

    tap_ok(p != NULL, "a policy with prices and limits loads");

    if (p == NULL) {
        tap_diag("error: ", err.msg);
        return;
    }

    l = &p->llm[0];
    pr = al_llm_price(l, "m1", 2);

    tap_ok(pr != NULL && pr->input == 150000 && pr->cached_input == 75000
           && pr->output == 600000, "prices in microdollars per million");
    pr = al_llm_price(l, "m2", 2);
    tap_ok(pr != NULL && pr->cached_input == pr->input,
           "cached_input defaults to input");
    tap_ok(al_llm_price(l, "m3", 2) == NULL, "no price for another model");

    tap_ok(l->clients[0].requests_per_minute == 60
           && l->clients[0].max_concurrent == 4
           && l->clients[0].cost_per_day == 5 * AL_LLM_USD / 2
           && l->clients[0].cost_per_month == 40 * AL_LLM_USD,
           "client limits, dollars in picodollars");
    tap_ok(al_llm_client_limited(&l->clients[0])
           && !al_llm_client_limited(&l->clients[1]),
           "limited: any limit set");
    tap_ok(al_llm_default_max_tokens(&l->clients[0])
           == AL_LLM_DEFAULT_MAX_TOKENS,
           "a dollar budget gets the default output cap reserved");

    al_policy_free(p);

    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 1, output: 1 }\n"
                    "    clients:\n"
                    "      agent: { usd_per_day: 1 }\n"
                    POLICY_TAIL,
                    "policy.yaml:17:29: agent has a dollar budget but model "
                    "\"m2\" has no price: add it to the prices of llm "
                    "\"oa\", or leave it out of this client's models"),
           "a dollar budget with an unpriced model: file:line:column");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 1, output: 1 }\n"
                    "    clients:\n"
                    "      agent: { models: [m1], usd_per_month: 1 }\n"
                    "      worker: { models: [m2] }\n"
                    POLICY_TAIL, NULL),
           "priced models only for the budgeted client: valid");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 0.0000001, output: 1 }\n"
                    "    clients: { agent: {} }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:20: input must be a number of dollars "
                    "with at most 6 decimals, found \"0.0000001\""),
           "a price with 7 decimals");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 1, cached_input: 2, output: 1 }\n"
                    "    clients: { agent: {} }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:37: cached_input is over input: cached "
                    "tokens cost at most as much as the others"),
           "cached_input over input");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m3: { input: 1, output: 1 }\n"
                    "    clients: { agent: {} }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:7: prices: model \"m3\" is not in the "
                    "provider's models"),
           "a price for a model not in models");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 1, outptu: 1 }\n"
                    "    clients: { agent: {} }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:23: unknown key \"outptu\" in a model's "
                    "prices (did you mean \"output\"?)"),
           "a misspelled price key");
    tap_ok(error_is(POLICY_HEAD
                    "    clients:\n"
                    "      agent: { max_concurrent_requests: 0 }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:41: max_concurrent_requests must be "
                    "between 1 and 1000000, found 0"),
           "max_concurrent_requests 0");
    tap_ok(error_is(POLICY_HEAD
                    "    prices: { m1: { input: 1, output: 1 }, "
                    "m2: { input: 1, output: 1 } }\n"
                    "    clients:\n"
                    "      agent: { usd_per_day: \"5\" }\n"
                    POLICY_TAIL,
                    "policy.yaml:16:29: usd_per_day must be a number of "
                    "dollars with at most 12 decimals, found \"5\""),
           "a quoted amount is refused");
    tap_ok(error_is(POLICY_HEAD
                    "    prices: { m1: { input: 1, output: 1 }, "
                    "m2: { input: 1, output: 1 } }\n"
                    "    clients:\n"
                    "      agent: { usd_per_day: 010 }\n"
                    POLICY_TAIL,
                    "policy.yaml:16:29: usd_per_day must be written without "
                    "leading zeros, found \"010\""),
           "an amount with a leading zero is refused (octal in YAML 1.1)");
    tap_ok(error_is(POLICY_HEAD
                    "    prices: { m1: { input: 007.5, output: 1 }, "
                    "m2: { input: 0.5, output: 1 } }\n"
                    "    clients:\n"
                    "      agent: { usd_per_day: 1 }\n"
                    POLICY_TAIL,
                    "policy.yaml:14:28: input must be written without "
                    "leading zeros, found \"007.5\""),
           "... a price too (0.5 is fine)");
    tap_ok(error_is(POLICY_HEAD
                    "    prices: { m1: { input: 1, output: 1 }, "
                    "m2: { input: 1, output: 1 } }\n"
                    "    clients:\n"
                    "      agent: { usd_per_month: 2000000 }\n"
                    POLICY_TAIL,
                    "policy.yaml:16:31: usd_per_month must be between "
                    "0.000000000001 and 1000000, found 2000000"),
           "an amount over the range");
}


static al_policy_t *
load(const char *yaml, al_error_t *err)
{
    memset(err, 0, sizeof(al_error_t));

    return al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, err);
}


/* want NULL: the policy must load */

static int
error_is(const char *yaml, const char *want)
{
    int           ok;
    char          buf[AL_ERR_MAX + 256];
    al_error_t    err;
    al_policy_t  *p;

    p = load(yaml, &err);

    if (p != NULL) {
        al_policy_free(p);
        return want == NULL;
    }

    (void) al_error_format(&err, buf, sizeof(buf));

    ok = (want != NULL && strcmp(buf, want) == 0);

    if (!ok) {
        tap_diag("got: ", buf);
    }

    return ok;
}


/*
 * long_context: a second set of prices for a call of more input tokens
 * than above_input_tokens, for all of its tokens; the reservation picks
 * them when the prompt may be above it (four times the estimate), the
 * charge of an estimated usage by the estimate.
 */

static void
test_long_context(void)
{
    al_error_t             err;
    al_policy_t           *p;
    al_llm_usage_t         u;
    const al_llm_t        *l;
    const al_llm_price_t  *pr;

    p = load(POLICY_HEAD
             "    prices:\n"
             "      m1:\n"
             "        input: 1.25\n"
             "        cached_input: 0.31\n"
             "        output: 10\n"
             "        long_context: { above_input_tokens: 200000, "
             "input: 2.5, cached_input: 0.625, output: 15 }\n"
             "      m2: { input: 2, output: 8, long_context: "
             "{ above_input_tokens: 1000, input: 4, output: 8 } }\n"
             "    clients:\n"
             "      agent: { usd_per_day: 2.5 }\n"
             POLICY_TAIL, &err);

    tap_ok(p != NULL, "long_context: a policy with it loads");

    if (p == NULL) {
        tap_diag("error: ", err.msg);
        return;
    }

    l = &p->llm[0];
    pr = al_llm_price(l, "m1", 2);

    tap_ok(pr != NULL && pr->long_context != NULL
           && pr->above_input_tokens == 200000
           && pr->long_context->input == 2500000
           && pr->long_context->cached_input == 625000
           && pr->long_context->output == 15000000,
           "long_context: its threshold and prices");

    tap_ok(al_llm_price_tier(pr, 200000) == pr
           && al_llm_price_tier(pr, 200001) == pr->long_context
           && al_llm_price_tier(NULL, 1) == NULL,
           "long_context: above the threshold only");

    memset(&u, 0, sizeof(u));
    u.prompt_tokens = 200000;
    u.cached_tokens = 100000;
    u.completion_tokens = 1000;

    /* 100000 * 1.25 + 100000 * 0.31 + 1000 * 10, in microdollars */
    tap_ok(al_llm_cost(pr, &u) == UINT64_C(166000000000),
           "long_context: a call at the threshold at the model's prices");

    u.prompt_tokens = 200001;

    /* 100001 * 2.5 + 100000 * 0.625 + 1000 * 15 */
    tap_ok(al_llm_cost(pr, &u) == UINT64_C(327502500000),
           "long_context: one token more: all tokens at its prices");

    tap_ok(al_llm_cost_need(pr, 0, 50000, 1000)
           == UINT64_C(72500000000)
           && al_llm_cost_need(pr, 0, 200001, 1000)
              == UINT64_C(515002500000),
           "long_context: the worst case by the prompt estimate");

    /*
     * an estimate the prompt may be four times: 50001 * 2.5 + 1000 * 15,
     * not 50001 * 1.25 + 1000 * 10
     */
    tap_ok(al_llm_cost_need(pr, 0, 50001, 1000) == UINT64_C(140002500000)
           && al_llm_cost_need(pr, 0, 200000, 1000)
              == UINT64_C(515000000000)
           && al_llm_cost_need(pr, 0, UINT64_MAX / 2, 0) == UINT64_MAX,
           "long_context: an estimate the prompt may be above the "
           "threshold: its prices");

    pr = al_llm_price(l, "m2", 2);

    tap_ok(pr != NULL && pr->long_context != NULL
           && pr->long_context->cached_input == 4000000
           && pr->long_context->cache_write == 4000000,
           "long_context: cached_input defaults to its own input");

    al_policy_free(p);

    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 2, output: 8, long_context: "
                    "{ input: 4, output: 8 } }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:48: long_context is missing the "
                    "required key \"above_input_tokens\""),
           "long_context: above_input_tokens is required");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 2, output: 8, long_context: "
                    "{ above_input_tokens: 10, input: 1, output: 8 } }\n"
                    POLICY_TAIL,
                    "policy.yaml:15:81: long_context: input is below the "
                    "model's own input: a long prompt costs at least as "
                    "much"),
           "long_context: a price below the model's own is refused");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 2, output: 8, long_context: "
                    "{ above_input_tokens: 0, input: 4, output: 8 } }\n"
                    POLICY_TAIL, "") == 0,
           "long_context: above_input_tokens 0 is refused");
    tap_ok(error_is(POLICY_HEAD
                    "    prices:\n"
                    "      m1: { input: 2, output: 8, long_context: "
                    "{ above_input_tokens: 5, input: 4, output: 8, "
                    "long_context: {} } }\n"
                    POLICY_TAIL, "") == 0,
           "long_context: not nested");
}
