/*
 * Delivery: sinks, Standard Webhooks signing, HTTP, retries.
 *
 * One thread drives every transfer through the libcurl multi interface,
 * polled together with the journal's inotify fd and the signal fd
 * (curl_multi_poll with extra fds).  A sink that is down or slow only
 * holds its own transfer, which its own timeouts bound (AD_CONNECT_TIMEOUT,
 * --attempt-timeout); the other sinks' transfers run beside it.  Threads
 * per sink would do the same with locks around the outbox, the groups
 * and the reload; one loop needs none of them.
 *
 * Each sink has at most one attempt in flight and sends its entries in
 * queue order, the clients' alerts before unidentified peers', and
 * those it refused after the others (ad_deliver_pick).  A 2xx status
 * delivers the alert, whatever then happens to the answer's body (its
 * start is kept for the log, AD_RESP_MAX bytes, the rest is read and
 * dropped, at most until --attempt-timeout).  When
 * a sink is unreachable, times out before a status, or answers 5xx, 408
 * or 429, the sink waits (exponential backoff from AD_BACKOFF_BASE,
 * doubling to AD_BACKOFF_CAP, full jitter; Retry-After is honoured up to
 * the cap).  Any other non-2xx is about that one alert: it alone waits,
 * with the same backoff, and goes after the alerts the sink did not
 * refuse; the sink goes on with the rest, and the answer is logged as
 * an error since only the receiver's operator can fix it;
 * but a second refusal in a row makes the sink wait too (a receiver
 * with a wrong secret refuses them all).  An alert the receiver had and
 * failed on AD_FAILS_PROBE times in a row (a 5xx, or no answer once the
 * request was sent: a receiver that crashes on its content) is passed
 * over once the sink's wait is over, and the next alert sent instead;
 * should the sink take that one and then fail on the first again, the
 * first is refused too.
 * Nothing is dropped for failing; what a full outbox does not take is
 * counted and reported (ad_outbox.c).
 *
 * Webhooks are signed per Standard Webhooks: webhook-id (the alert id,
 * the same on every attempt), webhook-timestamp (this attempt) and
 * webhook-signature "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>".
 * The key is the secret's bytes, or, for a secret written "whsec_<base64>"
 * as Standard Webhooks tooling generates them, the decoded base64.  A
 * webhook with an hmac_secret_also (a change of secret) gets a second
 * signature after the first, space-delimited as Standard Webhooks lists
 * them: the hmac_secret's stays first, so a receiver that reads one
 * signature reads the same one as before, and one that checks each
 * takes the alert under either key.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "alertd.h"


#define AD_SIG_ONE      (3 + 44)        /* "v1," + base64 of 32 bytes */
#define AD_SIG_MAX      (2 * AD_SIG_ONE + 1)    /* two, a space between */
#define AD_RESP_MAX     160             /* of an error answer, logged */
#define AD_RESP_KEEP    1024            /* of it, kept to take the
                                           sink's URL out */
#define AD_PIECE_MIN    4               /* a piece of the URL taken out
                                           of an answer, at least */
#define AD_JITTER_MIN   50              /* ms */


/*
 * The bytes compared: "+" and a space are one (a query's space), and
 * so are a space and any byte the answer keeps as one (ad_xfer_write).
 */

#define ad_resp_byte(c)                                                      \
    (((c) == '+' || (unsigned char) (c) < 0x20                               \
      || (unsigned char) (c) >= 0x7f) ? ' ' : (char) (c))


/*
 * Taking a sink's URL out of an error answer (ad_resp_scrub): the
 * answer three times as text to search, each byte there with the
 * answer's offset it starts at (at[n] is the end): as it came,
 * percent-decoded, and decoded twice ("%2541" is "A"); what is to go
 * is marked in cut[].
 */

typedef struct {
    ad_xfer_t          *x;
    size_t              end;            /* the answer is cut off here */
    size_t              n[3];
    char                text[3][AD_RESP_KEEP + 1];
    uint16_t            at[3][AD_RESP_KEEP + 1];
    unsigned char       cut[AD_RESP_KEEP + 1];
    char               *piece;          /* a piece, decoded */
    size_t             *border;         /* KMP table of a piece */
} ad_scrub_t;


struct ad_xfer_s {
    ad_xfer_t          *next;
    CURL               *easy;
    ad_entry_t         *entry;
    char                key[AD_KEY_HEX + 1];
    char                label[AD_LABEL_MAX];
    struct curl_slist  *headers;
    char               *url;
    char               *body;
    int64_t             started;
    size_t              resp_len;
    unsigned            resp_cut:1;     /* the answer had more */
    char                resp[AD_RESP_KEEP + 1];
    char                errbuf[CURL_ERROR_SIZE];
};


static int ad_hmac_key(const al_policy_t *p, const al_secret_t *sec,
    const char *field, const al_keyring_t *kr, ad_sink_t *s,
    unsigned char **key, size_t *keylen, char *err, size_t errsize);
static ad_sink_t *ad_sink_find(ad_deliver_t *d, const char *key);
static ad_entry_t *ad_deliver_pick(ad_deliver_t *d, ad_sink_t *s,
    int64_t now);
static int ad_xfer_start(ad_deliver_t *d, ad_sink_t *s, ad_entry_t *e);
static int ad_xfer_prepare(ad_deliver_t *d, ad_sink_t *s, ad_xfer_t *x);
static void ad_xfer_done(ad_deliver_t *d, ad_xfer_t *x, CURLcode res);
static void ad_xfer_free(ad_deliver_t *d, ad_xfer_t *x);
static void ad_sign(const unsigned char *key, size_t keylen, const char *id,
    const char *ts, const char *body, size_t len, char *out, size_t size);
static size_t ad_xfer_write(char *ptr, size_t size, size_t nmemb,
    void *data);
static void ad_resp_scrub(ad_xfer_t *x, const char *url, size_t len);
static void ad_resp_pieces(ad_scrub_t *sc, const char *p, const char *end);
static void ad_resp_piece(ad_scrub_t *sc, const char *piece, size_t len);
static size_t ad_resp_text(const char *in, const uint16_t *in_at,
    size_t len, int decode, char *text, uint16_t *at);
static void ad_resp_find(ad_scrub_t *sc, const char *text, size_t n,
    const uint16_t *at, const char *piece, size_t m);
static int ad_hex(int c);
static int64_t ad_backoff(unsigned n);


const char *
ad_sink_kind_name(al_sink_kind_t kind)
{
    return (kind == AL_SINK_WEBHOOK) ? "webhook" : "alertmanager";
}


/* a short stable name for (kind, url): outbox file names start with it */

void
ad_sink_key(al_sink_kind_t kind, const char *url, char *key)
{
    size_t                     i;
    const char                *word;
    unsigned char              h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state   st;
    static const char          hex[] = "0123456789abcdef";

    word = ad_sink_kind_name(kind);

    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const unsigned char *) word,
                              strlen(word));
    crypto_hash_sha256_update(&st, (const unsigned char *) "\n", 1);
    crypto_hash_sha256_update(&st, (const unsigned char *) url, strlen(url));
    crypto_hash_sha256_final(&st, h);

    for (i = 0; i < AD_KEY_HEX / 2; i++) {
        key[2 * i] = hex[h[i] >> 4];
        key[2 * i + 1] = hex[h[i] & 0xf];
    }

    key[AD_KEY_HEX] = '\0';
}


int
ad_sinks_from_policy(const al_policy_t *p, const al_keyring_t *kr,
    ad_sink_t **sinks, size_t *n, char *err, size_t errsize)
{
    size_t            i, k;
    ad_sink_t        *v, *s;
    const al_sink_t  *ps;

    *sinks = NULL;
    *n = 0;

    if (p->nsinks == 0) {
        return 0;
    }

    v = calloc(p->nsinks, sizeof(ad_sink_t));
    if (v == NULL) {
        (void) snprintf(err, errsize, "out of memory");
        return -1;
    }

    for (i = 0; i < p->nsinks; i++) {
        ps = &p->sinks[i];
        s = &v[i];

        s->kind = ps->kind;
        s->url = strndup(ps->url.data, ps->url.len);
        if (s->url == NULL) {
            (void) snprintf(err, errsize, "out of memory");
            goto failed;
        }

        ad_sink_key(s->kind, s->url, s->key);
        ad_url_label(s->label, sizeof(s->label), s->url);

        /*
         * The policy loader refuses the same sink twice; this keeps two
         * sinks from ever sharing outbox files should their keys meet.
         */

        for (k = 0; k < i; k++) {
            if (strcmp(v[k].key, s->key) == 0) {
                (void) snprintf(err, errsize, "%s: alerts.sinks lists the "
                                "%s %s twice", p->file.data,
                                ad_sink_kind_name(s->kind), s->label);
                goto failed;
            }
        }

        if (s->kind != AL_SINK_WEBHOOK) {
            continue;
        }

        if (ad_hmac_key(p, ps->hmac, "hmac_secret", kr, s, &s->hmac,
                        &s->hmac_len, err, errsize)
            != 0)
        {
            goto failed;
        }

        if (ps->hmac_also == NULL) {
            continue;
        }

        if (ad_hmac_key(p, ps->hmac_also, "hmac_secret_also", kr, s,
                        &s->hmac_also, &s->hmac_also_len, err, errsize)
            != 0)
        {
            goto failed;
        }

        s->hmac_also_name = strdup(ps->hmac_also->name.data);
        if (s->hmac_also_name == NULL) {
            (void) snprintf(err, errsize, "out of memory");
            goto failed;
        }

        /* two names, one key: two equal signatures, and no change */
        if (s->hmac_len == s->hmac_also_len
            && sodium_memcmp(s->hmac, s->hmac_also, s->hmac_len) == 0)
        {
            ad_log(AD_LOG_WARN, "webhook %s: secrets \"%s\" "
                   "(hmac_secret) and \"%s\" (hmac_secret_also) are the "
                   "same key", s->label, ps->hmac->name.data,
                   ps->hmac_also->name.data);
        }
    }

    *sinks = v;
    *n = p->nsinks;

    return 0;

failed:

    ad_sinks_free(v, p->nsinks);

    return -1;
}


/*
 * Opens one of the webhook's secrets (field: hmac_secret or
 * hmac_secret_also) alone and derives its HMAC key into *key, guarded
 * memory.
 */

static int
ad_hmac_key(const al_policy_t *p, const al_secret_t *sec,
    const char *field, const al_keyring_t *kr, ad_sink_t *s,
    unsigned char **key, size_t *keylen, char *err, size_t errsize)
{
    int             rc;
    size_t          len, vlen;
    unsigned char  *v, *k;

    if (sec == NULL) {
        (void) snprintf(err, errsize, "webhook %s: it names no %s",
                        s->label, field);
        return -1;
    }

    if (ad_secret_open(p, sec, kr, &v, &vlen, err, errsize) != 0) {
        return -1;
    }

    rc = -1;

    k = al_secure_alloc(vlen);
    if (k == NULL) {
        (void) snprintf(err, errsize, "out of memory");
        goto done;
    }

    if (vlen > 6 && memcmp(v, "whsec_", 6) == 0) {
        if (sodium_base642bin(k, vlen, (const char *) v + 6, vlen - 6,
                              NULL, &len, NULL,
                              sodium_base64_VARIANT_ORIGINAL)
            != 0
            && sodium_base642bin(k, vlen, (const char *) v + 6,
                                 vlen - 6, NULL, &len, NULL,
                                 sodium_base64_VARIANT_ORIGINAL_NO_PADDING)
               != 0)
        {
            (void) snprintf(err, errsize, "webhook %s: secret \"%s\" (%s) "
                            "starts with whsec_ but the rest is not base64",
                            s->label, sec->name.data, field);
            goto done;
        }

    } else {
        memcpy(k, v, vlen);
        len = vlen;
    }

    if (len == 0) {
        (void) snprintf(err, errsize, "webhook %s: secret \"%s\" (%s) is "
                        "empty", s->label, sec->name.data, field);
        goto done;
    }

    if (len < 16) {
        ad_log(AD_LOG_WARN, "webhook %s: secret \"%s\" (%s) is only %zu "
               "bytes; use 24 to 64 random bytes", s->label, sec->name.data,
               field, len);
    }

    *key = k;
    *keylen = len;
    k = NULL;
    rc = 0;

done:

    al_secure_free(k);
    al_secure_free(v);

    return rc;
}


void
ad_sinks_free(ad_sink_t *sinks, size_t n)
{
    size_t  i;

    if (sinks == NULL) {
        return;
    }

    for (i = 0; i < n; i++) {
        free(sinks[i].url);
        free(sinks[i].hmac_also_name);
        al_secure_free(sinks[i].hmac);
        al_secure_free(sinks[i].hmac_also);
    }

    free(sinks);
}


int
ad_deliver_init(ad_deliver_t *d, ad_outbox_t *ob, int64_t repeat_ms,
    int64_t attempt_ms, int once, char *err, size_t errsize)
{
    memset(d, 0, sizeof(ad_deliver_t));

    d->outbox = ob;
    d->repeat_ms = repeat_ms;
    d->attempt_ms = attempt_ms;
    d->once = once;

    d->multi = curl_multi_init();
    if (d->multi == NULL) {
        (void) snprintf(err, errsize, "libcurl: cannot create a multi "
                        "handle");
        return -1;
    }

    return 0;
}


void
ad_deliver_free(ad_deliver_t *d)
{
    ad_deliver_abort(d);

    if (d->multi != NULL) {
        curl_multi_cleanup(d->multi);
        d->multi = NULL;
    }

    ad_sinks_free(d->sinks, d->nsinks);
    d->sinks = NULL;
    d->nsinks = 0;
}


/*
 * Takes sinks; a sink that was there before keeps its backoff.  A sink
 * is busy while an attempt to it runs, also one started before a reload
 * that removed the sink and a later one that added it back: the attempt
 * was not stopped (its entry stays queued), and a second one beside it
 * would break the sink's one attempt at a time, in queue order.
 */

void
ad_deliver_set_sinks(ad_deliver_t *d, ad_sink_t *sinks, size_t n)
{
    size_t       i;
    ad_sink_t   *old;
    ad_xfer_t   *x;

    for (i = 0; i < n; i++) {
        old = ad_sink_find(d, sinks[i].key);
        if (old != NULL) {
            sinks[i].failures = old->failures;
            sinks[i].next_ms = old->next_ms;
        }

        for (x = d->xfers; x != NULL; x = x->next) {
            if (strcmp(x->key, sinks[i].key) == 0) {
                sinks[i].busy = 1;
                break;
            }
        }
    }

    ad_sinks_free(d->sinks, d->nsinks);

    d->sinks = sinks;
    d->nsinks = n;
}


static ad_sink_t *
ad_sink_find(ad_deliver_t *d, const char *key)
{
    size_t  i;

    for (i = 0; i < d->nsinks; i++) {
        if (strcmp(d->sinks[i].key, key) == 0) {
            return &d->sinks[i];
        }
    }

    return NULL;
}


/* says, once per sink, which queued alerts have no sink any more */

void
ad_deliver_orphans(ad_deliver_t *d)
{
    size_t       n;
    ad_entry_t  *e, *f;
    char         label[AD_LABEL_MAX];

    for (e = d->outbox->head; e != NULL; e = e->next) {
        if (ad_sink_find(d, e->key) != NULL) {
            continue;
        }

        for (f = d->outbox->head; f != e; f = f->next) {
            if (strcmp(f->key, e->key) == 0) {
                break;
            }
        }

        if (f != e) {
            continue;       /* told already */
        }

        n = 0;
        for (f = e; f != NULL; f = f->next) {
            n += (strcmp(f->key, e->key) == 0);
        }

        ad_url_label(label, sizeof(label), e->url);
        ad_log(AD_LOG_WARN, "%zu alert(s) queued for %s %s, which is not "
               "in the policy: kept in the outbox and sent if it comes "
               "back (to drop them: rm STATE/outbox/%s-*)", n,
               ad_sink_kind_name(e->kind), label, e->key);
    }
}


void
ad_deliver_start(ad_deliver_t *d)
{
    size_t       i;
    int64_t      now;
    ad_sink_t   *s;
    ad_entry_t  *e;

    if (d->stopping) {
        return;
    }

    now = ad_mono_ms();

    for (i = 0; i < d->nsinks; i++) {
        s = &d->sinks[i];

        if (s->busy || s->failed || (!d->once && now < s->next_ms)) {
            continue;
        }

        e = ad_deliver_pick(d, s, now);

        if (e != NULL && ad_xfer_start(d, s, e) != 0) {
            /* out of memory or libcurl refused: do not spin */
            s->failures++;
            s->next_ms = now + ad_backoff(s->failures);
            s->failed = d->once;
        }
    }
}


/*
 * The sink's next entry: the first ready one in queue order, of the
 * first of these ranks that has one:
 *
 *   0  a client's alert, or alertd's report of dropped alerts
 *   1  an unidentified peer's alert
 *   2  an alert the sink refused, a client's
 *   3  an alert the sink refused, a peer's
 *   4  while the sink waits after a failure, an alert it failed on
 *      AD_FAILS_PROBE times in a row, a client's
 *   5  the same, a peer's
 *
 * Anyone who reaches the proxy's port raises peers' alerts, from as
 * many addresses as it has, each a group of its own: queued ahead of a
 * client's quarantine, they would hold it up for as many attempts.
 * And a few alerts a sink will never take, each ready again at its
 * own backoff, would come first at nearly every turn of the sink,
 * whose wait grows with each refusal in a row, and hold up every
 * alert behind them for hours.  An alert the sink keeps failing on
 * (ranks 4 and 5) would hold them up for ever: the sink, failing,
 * waits and tries it again, and no other.  With the next alert tried
 * instead, a sink that is down fails on that one too, and waits as
 * long; one that takes it is up, and fails on the first alone
 * (ad_xfer_done).
 */

static ad_entry_t *
ad_deliver_pick(ad_deliver_t *d, ad_sink_t *s, int64_t now)
{
    unsigned     rank, best;
    ad_entry_t  *e, *pick;

    pick = NULL;
    best = 6;

    for (e = d->outbox->head; e != NULL; e = e->next) {
        if (e->busy || e->unsaved || strcmp(e->key, s->key) != 0) {
            continue;
        }

        if (d->once ? e->tried : (now < e->next_ms)) {
            continue;
        }

        rank = (e->refused ? 2 : 0)
               + (!e->alert.has_client && e->alert.kind != AD_KIND_DROPPED);

        if (s->failures > 0 && !e->refused && e->fails >= AD_FAILS_PROBE) {
            rank += 4;
        }

        if (rank < best) {
            pick = e;
            best = rank;

            if (rank == 0) {
                break;
            }
        }
    }

    return pick;
}


static int
ad_xfer_start(ad_deliver_t *d, ad_sink_t *s, ad_entry_t *e)
{
    ad_xfer_t  *x;

    x = calloc(1, sizeof(ad_xfer_t));
    if (x == NULL) {
        ad_log(AD_LOG_ERR, "cannot send alert %s: out of memory",
               e->alert.id);
        return -1;
    }

    x->entry = e;
    (void) snprintf(x->key, sizeof(x->key), "%s", s->key);
    (void) snprintf(x->label, sizeof(x->label), "%s", s->label);

    if (ad_xfer_prepare(d, s, x) != 0) {
        ad_xfer_free(d, x);
        return -1;
    }

    if (curl_multi_add_handle(d->multi, x->easy) != CURLM_OK) {
        ad_log(AD_LOG_ERR, "cannot send alert %s: libcurl refused the "
               "transfer", e->alert.id);
        ad_xfer_free(d, x);
        return -1;
    }

    x->started = ad_mono_ms();
    x->next = d->xfers;
    d->xfers = x;
    d->busy++;

    e->busy = 1;
    e->tried = 1;
    s->busy = 1;

    ad_log(AD_LOG_DEBUG, "sending alert %s to %s %s (attempt %u)",
           e->alert.id, ad_sink_kind_name(s->kind), s->label, e->attempts + 1);

    return 0;
}


static int
ad_xfer_prepare(ad_deliver_t *d, ad_sink_t *s, ad_xfer_t *x)
{
    int                 rc;
    char                line[AD_FID_MAX + AD_SIG_MAX + 32];
    char                ts[32], sig[AD_SIG_MAX + 1];
    size_t              len, n;
    json_t             *o;
    CURLcode            c;
    ad_entry_t         *e;
    struct curl_slist  *h;

    e = x->entry;

    if (s->kind == AL_SINK_WEBHOOK) {
        o = ad_alert_to_json(&e->alert);
        x->url = strdup(s->url);

    } else {
        o = ad_alert_to_alertmanager(&e->alert, d->repeat_ms);
        len = strlen(s->url) + sizeof("/api/v2/alerts");
        x->url = malloc(len);
        if (x->url != NULL) {
            (void) snprintf(x->url, len, "%s/api/v2/alerts", s->url);
        }
    }

    x->body = (o == NULL) ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);

    if (x->body == NULL || x->url == NULL) {
        ad_log(AD_LOG_ERR, "cannot send alert %s: out of memory",
               e->alert.id);
        return -1;
    }

    h = curl_slist_append(NULL, "Content-Type: application/json");
    x->headers = h;

    /* no "Expect: 100-continue" round trip before the body */
    h = (h == NULL) ? NULL : curl_slist_append(h, "Expect:");

    if (h != NULL && s->kind == AL_SINK_WEBHOOK) {
        (void) snprintf(ts, sizeof(ts), "%lld", (long long) time(NULL));
        len = strlen(x->body);
        ad_sign(s->hmac, s->hmac_len, e->alert.id, ts, x->body, len, sig,
                sizeof(sig));

        if (s->hmac_also != NULL) {
            n = strlen(sig);
            sig[n++] = ' ';
            ad_sign(s->hmac_also, s->hmac_also_len, e->alert.id, ts,
                    x->body, len, sig + n, sizeof(sig) - n);
        }

        (void) snprintf(line, sizeof(line), "webhook-id: %s", e->alert.id);
        h = curl_slist_append(h, line);

        if (h != NULL) {
            (void) snprintf(line, sizeof(line), "webhook-timestamp: %s", ts);
            h = curl_slist_append(h, line);
        }

        if (h != NULL) {
            (void) snprintf(line, sizeof(line), "webhook-signature: %s",
                            sig);
            h = curl_slist_append(h, line);
        }

        sodium_memzero(sig, sizeof(sig));
        sodium_memzero(line, sizeof(line));
    }

    if (h == NULL) {
        ad_log(AD_LOG_ERR, "cannot send alert %s: out of memory",
               e->alert.id);
        return -1;
    }

    x->easy = curl_easy_init();
    if (x->easy == NULL) {
        ad_log(AD_LOG_ERR, "cannot send alert %s: libcurl cannot create a "
               "handle", e->alert.id);
        return -1;
    }

    rc = 0;

    /*
     * Proxies from the environment are ignored: alertd talks to the
     * sinks in the policy and nothing else.
     */

    c = curl_easy_setopt(x->easy, CURLOPT_URL, x->url);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE,
                         (long) strlen(x->body));
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_USERAGENT,
                         AD_NAME "/" AL_VERSION);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT_MS,
                         (long) AD_CONNECT_TIMEOUT);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long) d->attempt_ms);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, ad_xfer_write);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
    rc |= (c != CURLE_OK);
    c = curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    rc |= (c != CURLE_OK);

#if LIBCURL_VERSION_NUM >= 0x075700

    /*
     * A transfer that times out while its name is resolved would wait,
     * in libcurl's cleanup, for the resolver thread's getaddrinfo() to
     * give up (10 s and more): the whole loop, every sink, with it.  The
     * thread is left to end on its own, and frees what it holds then.
     */

    c = curl_easy_setopt(x->easy, CURLOPT_QUICK_EXIT, 1L);
    rc |= (c != CURLE_OK);

#endif

    if (rc != 0) {
        ad_log(AD_LOG_ERR, "cannot send alert %s: libcurl refused an "
               "option", e->alert.id);
        return -1;
    }

    return 0;
}


/* writes "v1,<base64 HMAC-SHA256(key, id.ts.body)>" to out */

static void
ad_sign(const unsigned char *key, size_t keylen, const char *id,
    const char *ts, const char *body, size_t len, char *out, size_t size)
{
    unsigned char                  mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state   st;

    crypto_auth_hmacsha256_init(&st, key, keylen);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *) id,
                                  strlen(id));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *) ".", 1);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *) ts,
                                  strlen(ts));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *) ".", 1);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *) body, len);
    crypto_auth_hmacsha256_final(&st, mac);

    (void) snprintf(out, size, "v1,");
    (void) al_base64_encode(out + 3, size - 3, mac, sizeof(mac));

    sodium_memzero(&st, sizeof(st));
    sodium_memzero(mac, sizeof(mac));
}


/* keeps the start of the answer for the log, drops the rest */

static size_t
ad_xfer_write(char *ptr, size_t size, size_t nmemb, void *data)
{
    size_t      n, i;
    ad_xfer_t  *x;

    x = data;
    n = size * nmemb;

    for (i = 0; i < n && x->resp_len < AD_RESP_KEEP; i++) {
        x->resp[x->resp_len++] = (ptr[i] >= 0x20 && ptr[i] < 0x7f) ? ptr[i]
                                                                   : ' ';
    }

    if (i < n) {
        x->resp_cut = 1;
    }

    x->resp[x->resp_len] = '\0';

    return n;
}


void
ad_deliver_collect(ad_deliver_t *d)
{
    int         left;
    CURLMsg    *msg;
    ad_xfer_t  *x;

    for ( ;; ) {
        msg = curl_multi_info_read(d->multi, &left);
        if (msg == NULL) {
            break;
        }

        if (msg->msg != CURLMSG_DONE) {
            continue;
        }

        x = NULL;
        (void) curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &x);
        if (x == NULL) {
            continue;
        }

        ad_xfer_done(d, x, msg->data.result);
    }
}


static void
ad_xfer_done(ad_deliver_t *d, ad_xfer_t *x, CURLcode res)
{
    long         code, sent;
    int          alone;
    int64_t      now, delay, sdelay, took;
    ad_sink_t   *s;
    ad_entry_t  *e, *f;
    curl_off_t   after;
    const char  *err;
    char         why[CURL_ERROR_SIZE + 64], wait[96], then[64];

    e = x->entry;
    s = ad_sink_find(d, x->key);
    now = ad_mono_ms();
    took = now - x->started;

    code = 0;
    sent = 0;
    after = 0;
    (void) curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    (void) curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
    (void) curl_easy_getinfo(x->easy, CURLINFO_RETRY_AFTER, &after);

    err = NULL;
    if (res != CURLE_OK) {
        err = (x->errbuf[0] != '\0') ? x->errbuf : curl_easy_strerror(res);
    }

    e->busy = 0;
    e->attempts++;

    if (s != NULL) {
        s->busy = 0;
    }

    /*
     * The status is the answer, as for Standard Webhooks and Alertmanager:
     * once a 2xx has come, a body that fails or never ends (the attempt
     * then times out) does not make the alert undelivered, else it would
     * be sent again and again and hold up the sink's queue.
     */

    if (code >= 200 && code <= 299) {
        why[0] = '\0';
        if (err != NULL) {
            (void) snprintf(why, sizeof(why), "; the answer's body was not "
                            "read to its end: %s", err);
        }

        ad_log(AD_LOG_INFO, "delivered alert %s to %s %s (HTTP %ld, "
               "attempt %u, %lld ms%s)", e->alert.id,
               ad_sink_kind_name(e->kind), x->label, code, e->attempts,
               (long long) took, why);

        if (s != NULL) {
            s->failures = 0;
            s->next_ms = 0;
            s->refused = 0;
        }

        ad_outbox_done(d->outbox, e);
        ad_xfer_free(d, x);
        return;
    }

    /*
     * A receiver that crashes on one alert's content answers it 5xx, or
     * nothing once it has the request, every time: counted, as long as
     * no other alert fails between (below).  A connection, name or TLS
     * failure never sent the alert, and a 408 or 429 is about the rate.
     * Once the sink's failures are over (it took, or refused, another
     * alert since), one more such failure is about this alert alone,
     * and it is refused like a 4xx: a sink that is down would have
     * failed on the other alert too.
     */

    alone = 0;

    if (code >= 500 || (code == 0 && sent > 0)) {
        e->fails++;
        alone = (s != NULL && s->failures == 0
                 && e->fails > AD_FAILS_PROBE);
    }

    if ((res == CURLE_OK && code != 408 && code != 429 && code < 500)
        || alone)
    {
        /* the receiver is up and refuses this alert: it alone waits */

        ad_resp_scrub(x, x->url, (e->kind == AL_SINK_WEBHOOK)
                                 ? strlen(x->url)
                                 : strlen(x->url)
                                   - (sizeof("/api/v2/alerts") - 1));

        if (x->resp_len > AD_RESP_MAX) {
            x->resp_len = AD_RESP_MAX;
            x->resp[x->resp_len] = '\0';
        }

        while (x->resp_len > 0 && x->resp[x->resp_len - 1] == ' ') {
            x->resp[--x->resp_len] = '\0';
        }

        delay = ad_backoff(e->attempts);
        e->next_ms = now + delay;
        e->refused = 1;
        wait[0] = '\0';

        /*
         * A receiver that refuses two alerts in a row likely refuses
         * them all (a wrong secret): each waits its own backoff, but a
         * full outbox of them would still be sent one after another,
         * each refusal an error line, tens a second for as long as it
         * lasts.  The sink then waits too, as for a failure; an alert
         * it takes ends that.
         */

        if (s != NULL && s->refused) {
            s->failures++;
            sdelay = ad_backoff(s->failures);
            s->next_ms = now + sdelay;

            /* --once sends the sink's other alerts all the same */

            if (!d->once) {
                (void) snprintf(wait, sizeof(wait), "; it refused the "
                                "alert before too, and is sent nothing "
                                "for %.1f s", (double) sdelay / 1000);
            }

        } else if (s != NULL) {
            s->failures = 0;
            s->next_ms = 0;
            s->refused = 1;
        }

        /* --once tries it no more in this run: it stays queued */

        if (d->once) {
            (void) snprintf(then, sizeof(then), "it stays queued, the "
                            "next run tries it again");

        } else {
            (void) snprintf(then, sizeof(then), "retrying it in %.1f s",
                            (double) delay / 1000);
        }

        if (alone) {
            if (err != NULL) {
                (void) snprintf(why, sizeof(why), "%s", err);
            } else {
                (void) snprintf(why, sizeof(why), "HTTP %ld", code);
            }

            ad_log(AD_LOG_ERR, "%s %s: alert %s not delivered: %s%s%s "
                   "(attempt %u); failed %u times in a row while the sink "
                   "takes other alerts, it is sent after them, %s%s: fix "
                   "the receiver, or rm STATE/outbox/%s to drop it",
                   ad_sink_kind_name(e->kind), x->label, e->alert.id, why,
                   x->resp_len > 0 ? ": " : "", x->resp, e->attempts,
                   e->fails, then, wait, e->name);

        } else {
            ad_log(AD_LOG_ERR, "%s %s refused alert %s with HTTP %ld%s%s%s "
                   "(attempt %u); %s%s: fix the receiver, or rm "
                   "STATE/outbox/%s to drop it",
                   ad_sink_kind_name(e->kind), x->label, e->alert.id, code,
                   (code >= 300 && code < 400) ? " (redirects are not "
                                                 "followed)" : "",
                   x->resp_len > 0 ? ": " : "", x->resp, e->attempts,
                   then, wait, e->name);
        }

        ad_xfer_free(d, x);
        return;
    }

    /*
     * The sink is down, slow or overloaded: the whole sink waits.  And
     * an alert it failed on before is not one it fails on alone.
     */

    if (err != NULL) {
        (void) snprintf(why, sizeof(why), "%s", err);
    } else {
        (void) snprintf(why, sizeof(why), "HTTP %ld", code);
    }

    for (f = d->outbox->head; f != NULL; f = f->next) {
        if (f != e && !f->refused && strcmp(f->key, x->key) == 0) {
            f->fails = 0;
        }
    }

    if (s != NULL) {
        s->failures++;
        s->refused = 0;
        delay = ad_backoff(s->failures);

        /* in seconds, compared before it is made ms: it may be huge */

        if (after > 0 && after > delay / 1000) {
            delay = (after < AD_BACKOFF_CAP / 1000) ? after * 1000
                                                     : AD_BACKOFF_CAP;
        }

        s->next_ms = now + delay;
        s->failed = d->once;

    } else {
        delay = ad_backoff(e->attempts);
        e->next_ms = now + delay;
    }

    if (d->once) {
        /* --once tries the sink no more in this run: it stays queued */
        ad_log(AD_LOG_WARN, "%s %s: alert %s not delivered: %s (attempt "
               "%u, %lld ms); it stays queued, the next run tries it again",
               ad_sink_kind_name(e->kind), x->label, e->alert.id, why,
               e->attempts, (long long) took);

    } else {
        ad_log(AD_LOG_WARN, "%s %s: alert %s not delivered: %s (attempt "
               "%u, %lld ms); retrying in %.1f s",
               ad_sink_kind_name(e->kind), x->label, e->alert.id, why,
               e->attempts, (long long) took, (double) delay / 1000);
    }

    ad_xfer_free(d, x);
}


/*
 * An error answer may quote the request's URL (a 404 page: "Cannot
 * POST /services/T0/B0/XXXX"), and a webhook's userinfo, path or query
 * may be its secret, as ad_url_label() knows: every piece of them of
 * AD_PIECE_MIN bytes or more is taken out of the answer before it is
 * logged ("..." in its place), and so is the start of one at the end of
 * what was kept, cut off there.  A server may quote a piece decoded
 * ("+" as a space, as a form's; "%2F" as "/") or encoded otherwise
 * (bytes the URL has as they are percent-encoded, in either case of
 * hex, "+" as "%20"): the piece decoded, when AD_PIECE_MIN bytes or
 * more, goes too, wherever the answer has it with any of its bytes
 * percent-encoded or none, or encoded twice ("%2541" for "A": a server
 * that escapes its escapes).  The answer is decoded once, and that
 * decoded again, each no longer than what it is made of, and each
 * search is KMP, linear in the answer and the piece, not each form of
 * it tried.  Should memory for it be short, nothing of the answer is
 * logged.  len: the sink's URL in url, without what alertd appends to
 * it.
 */

static void
ad_resp_scrub(ad_xfer_t *x, const char *url, size_t len)
{
    size_t       i, w;
    ad_scrub_t  *sc;
    const char  *p, *end, *auth, *host, *stop;

    sc = calloc(1, sizeof(ad_scrub_t));
    if (sc != NULL) {
        sc->piece = malloc(len + 1);
        sc->border = malloc((len + 1) * sizeof(size_t));
    }

    if (sc == NULL || sc->piece == NULL || sc->border == NULL) {
        if (sc != NULL) {
            free(sc->piece);
            free(sc->border);
            free(sc);
        }

        x->resp_len = 0;
        x->resp[0] = '\0';
        return;
    }

    sc->x = x;
    sc->end = x->resp_len;
    sc->n[0] = ad_resp_text(x->resp, NULL, x->resp_len, 0, sc->text[0],
                            sc->at[0]);
    sc->n[1] = ad_resp_text(x->resp, NULL, x->resp_len, 1, sc->text[1],
                            sc->at[1]);
    sc->n[2] = ad_resp_text(sc->text[1], sc->at[1], sc->n[1], 1,
                            sc->text[2], sc->at[2]);

    if (x->resp_cut) {
        /*
         * an escape cut off at the end ("%2", or "%25" of "%2541"): part
         * of a piece, maybe
         */
        sc->end = sc->at[2][sc->n[2]];
    }

    end = url + len;
    p = strstr(url, "://");
    auth = (p != NULL && p < end) ? p + 3 : url;

    for (p = auth; p < end && strchr("/?#", *p) == NULL; p++) {
        /* void */
    }

    stop = p;
    host = auth;

    for (p = auth; p < stop; p++) {
        if (*p == '@') {
            host = p + 1;
        }
    }

    /* the userinfo's pieces; then the path's, the query's and so on */

    if (host != auth) {
        ad_resp_pieces(sc, auth, host - 1);
    }

    ad_resp_pieces(sc, stop, end);

    /* each run of bytes to take out becomes "...": none is shorter */

    w = 0;
    i = 0;

    while (i < sc->end) {
        if (!sc->cut[i]) {
            x->resp[w++] = x->resp[i++];
            continue;
        }

        while (i < sc->end && sc->cut[i]) {
            i++;
        }

        x->resp[w++] = '.';
        x->resp[w++] = '.';
        x->resp[w++] = '.';
    }

    x->resp_len = w;
    x->resp[w] = '\0';

    free(sc->piece);
    free(sc->border);
    free(sc);
}


static void
ad_resp_pieces(ad_scrub_t *sc, const char *p, const char *end)
{
    size_t  n;

    while (p < end) {
        for (n = 0; p + n < end && strchr(":@/?#&=;", p[n]) == NULL; n++) {
            /* void */
        }

        ad_resp_piece(sc, p, n);
        p += n + 1;
    }
}


/*
 * The answer as text to search: as it came, or percent-decoded (an
 * escape in either case of hex is its byte); at[] the offset in the
 * answer where each byte of the text starts, at[n] where the last ends:
 * an escape that the end cuts off is left out.  in is the answer
 * (in_at NULL), or a text made of it, in_at its offsets: decoded again.
 * The text is never longer than what it is made of.
 */

static size_t
ad_resp_text(const char *in, const uint16_t *in_at, size_t len,
    int decode, char *text, uint16_t *at)
{
    int     hi, lo;
    size_t  i, n;

    n = 0;
    i = 0;

    while (i < len) {
        at[n] = (in_at != NULL) ? in_at[i] : (uint16_t) i;

        if (decode && in[i] == '%') {
            hi = (i + 1 < len) ? ad_hex(in[i + 1]) : 0;
            lo = (i + 2 < len) ? ad_hex(in[i + 2]) : 0;

            if (i + 2 >= len && hi >= 0) {
                break;
            }

            if (hi >= 0 && lo >= 0) {
                text[n++] = ad_resp_byte(hi << 4 | lo);
                i += 3;
                continue;
            }
        }

        text[n++] = ad_resp_byte(in[i]);
        i++;
    }

    at[n] = (in_at != NULL) ? in_at[i] : (uint16_t) i;

    return n;
}


static void
ad_resp_piece(ad_scrub_t *sc, const char *piece, size_t len)
{
    int     hi, lo;
    size_t  i, m;

    if (len >= AD_PIECE_MIN) {
        for (i = 0; i < len; i++) {
            sc->piece[i] = ad_resp_byte(piece[i]);
        }

        ad_resp_find(sc, sc->text[0], sc->n[0], sc->at[0], sc->piece, len);
    }

    /* decoded */

    m = 0;

    for (i = 0; i < len; i++) {
        hi = (i + 2 < len && piece[i] == '%') ? ad_hex(piece[i + 1]) : -1;
        lo = (hi >= 0) ? ad_hex(piece[i + 2]) : -1;

        if (lo >= 0) {
            sc->piece[m++] = ad_resp_byte(hi << 4 | lo);
            i += 2;

        } else {
            sc->piece[m++] = ad_resp_byte(piece[i]);
        }
    }

    if (m < AD_PIECE_MIN) {
        return;
    }

    /*
     * quoted with any escapes, with its escapes escaped again, and, when
     * it has escapes, as it is
     */

    ad_resp_find(sc, sc->text[1], sc->n[1], sc->at[1], sc->piece, m);
    ad_resp_find(sc, sc->text[2], sc->n[2], sc->at[2], sc->piece, m);

    if (m != len) {
        ad_resp_find(sc, sc->text[0], sc->n[0], sc->at[0], sc->piece, m);
    }
}


/*
 * Knuth-Morris-Pratt: marks each occurrence of the piece in the text,
 * and, if the answer was cut off, the end of the text that is a start of
 * the piece.
 */

static void
ad_resp_find(ad_scrub_t *sc, const char *text, size_t n,
    const uint16_t *at, const char *piece, size_t m)
{
    size_t  i, j, q, *b;

    b = sc->border;
    b[0] = 0;
    q = 0;

    for (i = 1; i < m; i++) {
        while (q > 0 && piece[i] != piece[q]) {
            q = b[q - 1];
        }

        if (piece[i] == piece[q]) {
            q++;
        }

        b[i] = q;
    }

    q = 0;

    for (j = 0; j < n; j++) {
        while (q > 0 && text[j] != piece[q]) {
            q = b[q - 1];
        }

        if (text[j] == piece[q]) {
            q++;
        }

        if (q == m) {
            memset(sc->cut + at[j + 1 - m], 1, at[j + 1] - at[j + 1 - m]);
            q = b[m - 1];
        }
    }

    if (sc->x->resp_cut && q > 0 && at[n - q] < sc->end) {
        /* cut off at the end: its start goes too */
        sc->end = at[n - q];
    }
}


static int
ad_hex(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }

    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }

    return -1;
}


static void
ad_xfer_free(ad_deliver_t *d, ad_xfer_t *x)
{
    ad_xfer_t  **pp;

    for (pp = &d->xfers; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == x) {
            *pp = x->next;
            d->busy--;
            break;
        }
    }

    if (x->easy != NULL) {
        (void) curl_multi_remove_handle(d->multi, x->easy);
        curl_easy_cleanup(x->easy);
    }

    curl_slist_free_all(x->headers);
    free(x->url);
    free(x->body);
    free(x);
}


/* an interrupted attempt is not a failure: the entry just stays queued */

void
ad_deliver_abort(ad_deliver_t *d)
{
    ad_sink_t  *s;

    while (d->xfers != NULL) {
        ad_log(AD_LOG_INFO, "alert %s to %s: attempt cut short by the "
               "shutdown; it stays queued", d->xfers->entry->alert.id,
               d->xfers->label);

        d->xfers->entry->busy = 0;

        s = ad_sink_find(d, d->xfers->key);
        if (s != NULL) {
            s->busy = 0;
        }

        ad_xfer_free(d, d->xfers);
    }
}


static int64_t
ad_backoff(unsigned n)
{
    int64_t   max;
    unsigned  i;

    max = AD_BACKOFF_BASE;

    for (i = 1; i < n && max < AD_BACKOFF_CAP; i++) {
        max *= 2;
    }

    if (max > AD_BACKOFF_CAP) {
        max = AD_BACKOFF_CAP;
    }

    /*
     * Full jitter: anywhere up to max, so that many retries spread out;
     * the small floor only keeps a zero from spinning the loop.
     */

    return AD_JITTER_MIN
           + (int64_t) randombytes_uniform((uint32_t) (max - AD_JITTER_MIN
                                                       + 1));
}


int64_t
ad_deliver_next(const ad_deliver_t *d)
{
    size_t             i;
    int64_t            next, t;
    const ad_sink_t   *s;
    const ad_entry_t  *e;

    next = -1;

    for (i = 0; i < d->nsinks; i++) {
        s = &d->sinks[i];

        if (s->busy || s->failed) {
            continue;
        }

        for (e = d->outbox->head; e != NULL; e = e->next) {
            if (e->busy || e->unsaved || (d->once && e->tried)
                || strcmp(e->key, s->key) != 0)
            {
                continue;
            }

            t = (e->next_ms > s->next_ms) ? e->next_ms : s->next_ms;

            if (next == -1 || t < next) {
                next = t;
            }

            if (e->next_ms <= s->next_ms) {
                break;      /* none after it is sooner */
            }
        }
    }

    return next;
}


int
ad_deliver_poll(ad_deliver_t *d, int *fds, size_t nfds, int *ready,
    int timeout_ms)
{
    int                  running, numfds;
    size_t               i;
    CURLMcode            mc;
    struct curl_waitfd   w[4];

    if (nfds > sizeof(w) / sizeof(w[0])) {
        nfds = sizeof(w) / sizeof(w[0]);
    }

    for (i = 0; i < nfds; i++) {
        w[i].fd = fds[i];
        w[i].events = CURL_WAIT_POLLIN;
        w[i].revents = 0;
    }

    mc = curl_multi_poll(d->multi, w, (unsigned) nfds, timeout_ms, &numfds);
    if (mc != CURLM_OK) {
        ad_log(AD_LOG_ERR, "libcurl: %s", curl_multi_strerror(mc));
        return -1;
    }

    for (i = 0; i < nfds; i++) {
        ready[i] = (w[i].revents & CURL_WAIT_POLLIN) != 0;
    }

    mc = curl_multi_perform(d->multi, &running);
    if (mc != CURLM_OK) {
        ad_log(AD_LOG_ERR, "libcurl: %s", curl_multi_strerror(mc));
        return -1;
    }

    return 0;
}


/* --once: nothing in flight and nothing left to try in this run */

int
ad_deliver_idle(const ad_deliver_t *d)
{
    size_t             i;
    const ad_entry_t  *e;

    if (d->busy > 0) {
        return 0;
    }

    for (i = 0; i < d->nsinks; i++) {
        if (d->sinks[i].failed) {
            continue;
        }

        for (e = d->outbox->head; e != NULL; e = e->next) {
            if (!e->tried && !e->unsaved
                && strcmp(e->key, d->sinks[i].key) == 0)
            {
                return 0;
            }
        }
    }

    return 1;
}
