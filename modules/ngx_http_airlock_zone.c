
/*
 * Airlock deny counting and quarantine: the shared zone.
 *
 * "airlock_zone NAME SIZE" keeps, in the manner of limit_req, how many
 * requests each client had denied lately: a slab pool, an rbtree to find a
 * node and an LRU queue to expire the oldest, reused as it is across
 * reloads.  There are two kinds of nodes:
 *
 *   (client, reason)  denials of one reason, against alerts.deny;
 *   (client)          all denials of a client, against alerts.quarantine,
 *                     and the client's quarantine.
 *
 * A client the policy does not know is counted under its peer (address, an
 * IPv6 address's /64, or uid on a unix socket), so that an anonymous
 * scanner raises alerts too.
 * It is never quarantined: it is refused everything already.
 *
 * A count is a ring of 16 slots of window/16 each: a denial counts for at
 * least 15/16 of the window and never longer than the window.  Thresholds
 * and windows are read from the policy of the request's cycle, so a reload
 * that changes them applies to the counts already made.
 *
 * The zone mutex is held around one lookup and its update only; alerts are
 * written to the journal once it is released.  When the zone is full and
 * nothing can be freed, denials are not counted (they are still refused
 * and logged), and each worker says so once.
 *
 * The nodes of unknown peers are kept in an LRU queue of their own.  Any
 * peer can reach the port, from as many addresses as it has (an IPv6
 * network has plenty), so a full zone frees a live peer's node before a
 * client's, and a peer's new node never frees a client's live one: a
 * flood of anonymous denials cannot push out the counts that lead to a
 * client's quarantine.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


#define NGX_HTTP_AIRLOCK_SLOTS        16
#define NGX_HTTP_AIRLOCK_KEY_MAX      80
#define NGX_HTTP_AIRLOCK_EXPIRE_MAX   8       /* nodes one expiry looks at */
#define NGX_HTTP_AIRLOCK_STATUS_MAX   1000    /* nodes in a status answer */
#define NGX_HTTP_AIRLOCK_STATUS_SCAN  4000    /* nodes it looks at */

/* checked when a zone is reused: the layout of the nodes and head below */
#define NGX_HTTP_AIRLOCK_ZONE_MAGIC                                         \
    (0x416a0000 + sizeof(ngx_http_airlock_node_t)                          \
     + (sizeof(ngx_http_airlock_shctx_t) << 10))

/* the first byte of a key */
#define NGX_HTTP_AIRLOCK_KEY_CLIENT   0       /* a client, by name */
#define NGX_HTTP_AIRLOCK_KEY_PEER     1       /* an unknown client's peer */

/* how a node was found */
#define NGX_HTTP_AIRLOCK_FOUND        0
#define NGX_HTTP_AIRLOCK_NEW          1
#define NGX_HTTP_AIRLOCK_FORCED       2       /* a live node was freed */


typedef struct {
    u_char                        color;
    u_char                        alerted;      /* "alert" is set */
    u_short                       len;          /* of data */
    ngx_queue_t                   queue;
    ngx_msec_t                    last;         /* the last denial counted */
    ngx_msec_t                    alert;        /* the last alert raised */
    ngx_msec_t                    until;        /* quarantine end; 0: none */
    uint64_t                      head;         /* number of the newest
                                                   slot */
    uint32_t                      window;       /* seconds the slots are
                                                   for; 0: none yet */
    u_char                        qreason;      /* what started the
                                                   quarantine */
    uint32_t                      slot[NGX_HTTP_AIRLOCK_SLOTS];
    u_char                        data[1];      /* kind, reason, name */
} ngx_http_airlock_node_t;


typedef struct {
    ngx_rbtree_t                  rbtree;
    ngx_rbtree_node_t             sentinel;
    ngx_queue_t                   queue;        /* clients' nodes, most
                                                   recent first */
    ngx_queue_t                   peers;        /* unknown peers' nodes */
    ngx_uint_t                    magic;
    ngx_uint_t                    nodes;
    ngx_atomic_t                  quarantine_end;   /* the latest end of a
                                                       quarantine; read
                                                       without the lock */
    ngx_atomic_t                  made;         /* 1: made anew, not yet
                                                   said in the journal */
} ngx_http_airlock_shctx_t;


typedef struct {
    ngx_http_airlock_shctx_t     *sh;
    ngx_slab_pool_t              *shpool;
    ngx_uint_t                    nomem;        /* this worker said that
                                                   the zone is full */
} ngx_http_airlock_zone_ctx_t;


/* a node as the status handler copies it under the lock */
typedef struct {
    u_char                        kind;
    u_char                        reason;
    u_char                        qreason;
    u_char                        len;
    u_char                        name[NGX_HTTP_AIRLOCK_KEY_MAX];
    ngx_uint_t                    count;
    ngx_uint_t                    window;
    ngx_msec_t                    left;         /* of the quarantine */
} ngx_http_airlock_snap_t;


static ngx_int_t ngx_http_airlock_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_airlock_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static size_t ngx_http_airlock_key(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, al_reason_t reason, u_char *key);
static ngx_http_airlock_node_t *ngx_http_airlock_lookup(
    ngx_http_airlock_zone_ctx_t *zc, uint32_t hash, u_char *key, size_t len);
static ngx_http_airlock_node_t *ngx_http_airlock_get(
    ngx_http_airlock_zone_ctx_t *zc, u_char *key, size_t len, ngx_msec_t now,
    ngx_uint_t *how);
static void ngx_http_airlock_expire(ngx_http_airlock_zone_ctx_t *zc,
    ngx_queue_t *queue, ngx_uint_t force, ngx_msec_t now);
static ngx_uint_t ngx_http_airlock_expired(ngx_http_airlock_node_t *an,
    ngx_msec_t now);
static ngx_uint_t ngx_http_airlock_add(ngx_http_airlock_node_t *an,
    ngx_msec_t now, ngx_uint_t window);
static ngx_uint_t ngx_http_airlock_sum(ngx_http_airlock_node_t *an,
    ngx_msec_t now);
static ngx_int_t ngx_http_airlock_status_handler(ngx_http_request_t *r);
static u_char *ngx_http_airlock_status_name(u_char *p,
    ngx_http_airlock_snap_t *s);


char *
ngx_http_airlock_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_main_conf_t  *amcf = conf;

    ssize_t                       size;
    ngx_str_t                    *value;
    ngx_shm_zone_t               *shm_zone;
    ngx_http_airlock_zone_ctx_t  *zc;

    if (amcf->zone != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    size = ngx_parse_size(&value[2]);

    if (size == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone size \"%V\"", &value[2]);
        return NGX_CONF_ERROR;
    }

    if (size < (ssize_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is too small", &value[1]);
        return NGX_CONF_ERROR;
    }

    zc = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_zone_ctx_t));
    if (zc == NULL) {
        return NGX_CONF_ERROR;
    }

    shm_zone = ngx_shared_memory_add(cf, &value[1], size,
                                     &ngx_http_airlock_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is already used", &value[1]);
        return NGX_CONF_ERROR;
    }

    shm_zone->init = ngx_http_airlock_init_zone;
    shm_zone->data = zc;

    amcf->zone = shm_zone;

    return NGX_CONF_OK;
}


/*
 * On reload nginx hands over the old zone when its name and size are
 * unchanged: counts and quarantines carry on.  A zone made by a module
 * whose nodes look different is refused rather than misread.
 */

static ngx_int_t
ngx_http_airlock_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_airlock_zone_ctx_t  *ozc = data;

    size_t                        len;
    ngx_http_airlock_zone_ctx_t  *zc;

    zc = shm_zone->data;

    if (ozc) {
        if (ozc->sh->magic != NGX_HTTP_AIRLOCK_ZONE_MAGIC) {
            ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                          "airlock_zone \"%V\" was made by another version "
                          "of the module; give it another name",
                          &shm_zone->shm.name);
            return NGX_ERROR;
        }

        zc->sh = ozc->sh;
        zc->shpool = ozc->shpool;

        return NGX_OK;
    }

    zc->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        zc->sh = zc->shpool->data;

        return NGX_OK;
    }

    zc->sh = ngx_slab_alloc(zc->shpool, sizeof(ngx_http_airlock_shctx_t));
    if (zc->sh == NULL) {
        return NGX_ERROR;
    }

    zc->shpool->data = zc->sh;

    ngx_rbtree_init(&zc->sh->rbtree, &zc->sh->sentinel,
                    ngx_http_airlock_rbtree_insert_value);

    ngx_queue_init(&zc->sh->queue);
    ngx_queue_init(&zc->sh->peers);

    zc->sh->magic = NGX_HTTP_AIRLOCK_ZONE_MAGIC;
    zc->sh->nodes = 0;
    zc->sh->quarantine_end = 0;

    /*
     * Every quarantine is lifted with the zone it was in: the first
     * worker of the cycle says so in the journal
     * (ngx_http_airlock_zone_made()).  Workers start only once the
     * cycle did, so "nginx -t" and a reload that fails say nothing.
     */

    zc->sh->made = 1;

    len = sizeof(" in airlock_zone \"\"") + shm_zone->shm.name.len;

    zc->shpool->log_ctx = ngx_slab_alloc(zc->shpool, len);
    if (zc->shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(zc->shpool->log_ctx, " in airlock_zone \"%V\"%Z",
                &shm_zone->shm.name);

    zc->shpool->log_nomem = 0;

    return NGX_OK;
}


static void
ngx_http_airlock_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t        **p;
    ngx_http_airlock_node_t   *an, *ant;

    for ( ;; ) {

        if (node->key < temp->key) {

            p = &temp->left;

        } else if (node->key > temp->key) {

            p = &temp->right;

        } else { /* node->key == temp->key */

            an = (ngx_http_airlock_node_t *) &node->color;
            ant = (ngx_http_airlock_node_t *) &temp->color;

            p = (ngx_memn2cmp(an->data, ant->data, an->len, ant->len) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/*
 * Before the route is looked at: the time left of the client's quarantine
 * in ms, or 0.  Without any quarantine running the zone is not locked.
 */

ngx_msec_t
ngx_http_airlock_quarantined(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx)
{
    size_t                         len;
    ngx_msec_t                     now, left;
    ngx_http_airlock_node_t       *an;
    ngx_http_airlock_zone_ctx_t   *zc;
    ngx_http_airlock_main_conf_t  *amcf;
    u_char                         key[NGX_HTTP_AIRLOCK_KEY_MAX];

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    if (amcf->zone == NULL || ctx->client == NULL) {
        return 0;
    }

    zc = amcf->zone->data;
    now = ngx_current_msec;

    if ((ngx_msec_int_t) (zc->sh->quarantine_end - now) <= 0) {
        return 0;
    }

    len = ngx_http_airlock_key(r, ctx, AL_REASON_NONE, key);

    left = 0;

    ngx_shmtx_lock(&zc->shpool->mutex);

    an = ngx_http_airlock_lookup(zc, ngx_crc32_short(key, len), key, len);

    if (an != NULL && an->until && (ngx_msec_int_t) (an->until - now) > 0) {
        left = an->until - now;
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    return left;
}


/*
 * Counts a denial.  Fills alerts[] (at most two: the deny threshold and a
 * quarantine) and returns how many there are.  A denial of a quarantined
 * client is not counted: the quarantine does not feed itself.
 */

ngx_uint_t
ngx_http_airlock_count(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_http_airlock_alert_t *alerts)
{
    size_t                         len;
    ngx_uint_t                     n, count, how, failed, room;
    ngx_msec_t                     now, window;
    const al_policy_t             *p;
    ngx_http_airlock_node_t       *an;
    ngx_http_airlock_zone_ctx_t   *zc;
    ngx_http_airlock_main_conf_t  *amcf;
    u_char                         key[NGX_HTTP_AIRLOCK_KEY_MAX];

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    if (amcf->zone == NULL
        || ctx->reason == AL_REASON_NONE
        || ctx->reason == AL_REASON_QUARANTINED)
    {
        return 0;
    }

    p = amcf->policy;
    zc = amcf->zone->data;
    now = ngx_current_msec;

    n = 0;
    failed = 0;
    room = 0;

    len = ngx_http_airlock_key(r, ctx, ctx->reason, key);

    ngx_shmtx_lock(&zc->shpool->mutex);

    if (p->deny.threshold) {
        an = ngx_http_airlock_get(zc, key, len, now, &how);

        if (an == NULL) {
            failed = 1;

        } else {
            room |= (how == NGX_HTTP_AIRLOCK_NEW);

            count = ngx_http_airlock_add(an, now, p->deny.window);
            window = (ngx_msec_t) p->deny.window * 1000;

            /* one alert per crossing, and a reminder once per window for
               as long as the count stays at the threshold */

            if (count < p->deny.threshold) {
                an->alerted = 0;

            } else if (!an->alerted || now - an->alert >= window) {
                an->alerted = 1;
                an->alert = now;

                alerts[n].kind = NGX_HTTP_AIRLOCK_ALERT_DENY;
                alerts[n].count = count;
                alerts[n].window = p->deny.window;
                alerts[n].left = 0;
                n++;
            }
        }
    }

    if (ctx->client != NULL && p->quarantine.threshold) {
        key[1] = AL_REASON_NONE;

        an = ngx_http_airlock_get(zc, key, len, now, &how);

        if (an == NULL) {
            failed = 1;

        } else if (an->until == 0 || (ngx_msec_int_t) (an->until - now) <= 0)
        {
            room |= (how == NGX_HTTP_AIRLOCK_NEW);

            count = ngx_http_airlock_add(an, now, p->quarantine.window);

            if (count >= p->quarantine.threshold) {

                /* the client starts afresh once the quarantine is over */

                an->until = now + (ngx_msec_t) p->quarantine.duration * 1000;
                an->qreason = (u_char) ctx->reason;
                ngx_memzero(an->slot, sizeof(an->slot));

                if ((ngx_msec_int_t) (an->until - zc->sh->quarantine_end)
                    > 0)
                {
                    zc->sh->quarantine_end = an->until;
                }

                alerts[n].kind = NGX_HTTP_AIRLOCK_ALERT_QUARANTINE;
                alerts[n].count = count;
                alerts[n].window = p->quarantine.window;
                alerts[n].left = an->until - now;
                n++;
            }
        }
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    /* one alert per worker while the zone stays full */

    if (failed) {
        if (!zc->nomem) {
            zc->nomem = 1;
            ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                       "airlock: could not allocate node%s: "
                                       "denials are not counted until it "
                                       "has room", zc->shpool->log_ctx);
        }

    } else if (room && zc->nomem) {
        zc->nomem = 0;
        ngx_http_airlock_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                                   "airlock: room again%s",
                                   zc->shpool->log_ctx);
    }

    return n;
}


/*
 * The kind of key, the reason (AL_REASON_NONE: the client's own node),
 * then the client's name or, for an unknown client, its peer.
 */

static size_t
ngx_http_airlock_key(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    al_reason_t reason, u_char *key)
{
    u_char  *p, *last;
    size_t   len;

    p = key;
    last = key + NGX_HTTP_AIRLOCK_KEY_MAX;

    *p++ = (ctx->client != NULL) ? NGX_HTTP_AIRLOCK_KEY_CLIENT
                                 : NGX_HTTP_AIRLOCK_KEY_PEER;
    *p++ = (u_char) reason;

    if (ctx->client != NULL) {
        len = ngx_min(ctx->client->name.len, (size_t) (last - p));
        p = ngx_cpymem(p, ctx->client->name.data, len);

    } else {
        p = ngx_http_airlock_peer_text(r, ctx, p, last);
    }

    return p - key;
}


/*
 * The peer of an unknown client: "uid:1000" on a unix socket, an IPv4
 * address, or the /64 of an IPv6 one ("fd00:0:0:7::/64"): a host is given
 * a whole /64 and may send from any address in it, one count each.
 */

u_char *
ngx_http_airlock_peer_text(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, u_char *p, u_char *last)
{
    al_peer_t  net;

    /* the real peer, not c->addr_text: realip rewrites that */

    if (ctx->peer.unix_peer || !ctx->peer.has_addr
        || ngx_memcmp(ctx->peer.addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)
           == 0)
    {
        return ngx_http_airlock_peer_addr_text(&ctx->peer, p, last);
    }

    net = ctx->peer;
    ngx_memzero(&net.addr[8], 8);

    p = ngx_http_airlock_peer_addr_text(&net, p, last);

    return ngx_slprintf(p, last, "/64");
}


static ngx_http_airlock_node_t *
ngx_http_airlock_lookup(ngx_http_airlock_zone_ctx_t *zc, uint32_t hash,
    u_char *key, size_t len)
{
    ngx_int_t                 rc;
    ngx_rbtree_node_t        *node, *sentinel;
    ngx_http_airlock_node_t  *an;

    node = zc->sh->rbtree.root;
    sentinel = zc->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        /* hash == node->key */

        an = (ngx_http_airlock_node_t *) &node->color;

        rc = ngx_memn2cmp(key, an->data, len, (size_t) an->len);

        if (rc == 0) {
            return an;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


/* finds or makes the node of key; with the lock held */

static ngx_http_airlock_node_t *
ngx_http_airlock_get(ngx_http_airlock_zone_ctx_t *zc, u_char *key,
    size_t len, ngx_msec_t now, ngx_uint_t *how)
{
    size_t                    size;
    uint32_t                  hash;
    ngx_queue_t              *queue;
    ngx_rbtree_node_t        *node;
    ngx_http_airlock_node_t  *an;

    hash = ngx_crc32_short(key, len);

    queue = (key[0] == NGX_HTTP_AIRLOCK_KEY_PEER) ? &zc->sh->peers
                                                  : &zc->sh->queue;

    an = ngx_http_airlock_lookup(zc, hash, key, len);

    if (an != NULL) {
        ngx_queue_remove(&an->queue);
        ngx_queue_insert_head(queue, &an->queue);

        *how = NGX_HTTP_AIRLOCK_FOUND;
        return an;
    }

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_airlock_node_t, data)
           + len;

    *how = NGX_HTTP_AIRLOCK_NEW;

    ngx_http_airlock_expire(zc, queue, 0, now);

    node = ngx_slab_alloc_locked(zc->shpool, size);

    if (node == NULL) {
        *how = NGX_HTTP_AIRLOCK_FORCED;

        /* a live peer goes first; a client's live count only for a
           client */

        ngx_http_airlock_expire(zc, &zc->sh->peers, 1, now);

        node = ngx_slab_alloc_locked(zc->shpool, size);

        if (node == NULL) {
            ngx_http_airlock_expire(zc, &zc->sh->queue,
                                    queue == &zc->sh->queue, now);

            node = ngx_slab_alloc_locked(zc->shpool, size);
            if (node == NULL) {
                return NULL;
            }
        }
    }

    node->key = hash;

    an = (ngx_http_airlock_node_t *) &node->color;

    an->alerted = 0;
    an->len = (u_short) len;
    an->last = now;
    an->alert = 0;
    an->until = 0;
    an->head = 0;
    an->window = 0;
    an->qreason = 0;
    ngx_memzero(an->slot, sizeof(an->slot));
    ngx_memcpy(an->data, key, len);

    ngx_rbtree_insert(&zc->sh->rbtree, node);
    ngx_queue_insert_head(queue, &an->queue);

    zc->sh->nodes++;

    return an;
}


/*
 * Looks at the least recently used nodes of a queue: frees up to two that
 * have expired and, with force, the oldest live one.  A running quarantine
 * is never freed: it goes back to the head of the queue.
 */

static void
ngx_http_airlock_expire(ngx_http_airlock_zone_ctx_t *zc, ngx_queue_t *queue,
    ngx_uint_t force, ngx_msec_t now)
{
    ngx_uint_t                i, expired;
    ngx_queue_t              *q;
    ngx_rbtree_node_t        *node;
    ngx_http_airlock_node_t  *an;

    expired = 0;

    for (i = 0; i < NGX_HTTP_AIRLOCK_EXPIRE_MAX; i++) {

        if (ngx_queue_empty(queue)) {
            return;
        }

        q = ngx_queue_last(queue);

        an = ngx_queue_data(q, ngx_http_airlock_node_t, queue);

        if (an->until && (ngx_msec_int_t) (an->until - now) > 0) {
            ngx_queue_remove(q);
            ngx_queue_insert_head(queue, q);
            continue;
        }

        if (ngx_http_airlock_expired(an, now)) {
            if (expired++ == 2) {
                return;
            }

        } else if (force && expired == 0) {
            force = 0;

        } else {
            return;
        }

        ngx_queue_remove(q);

        node = (ngx_rbtree_node_t *)
                   ((u_char *) an - offsetof(ngx_rbtree_node_t, color));

        ngx_rbtree_delete(&zc->sh->rbtree, node);

        ngx_slab_free_locked(zc->shpool, node);

        zc->sh->nodes--;
    }
}


/* nothing counted within the window, and no quarantine running */

static ngx_uint_t
ngx_http_airlock_expired(ngx_http_airlock_node_t *an, ngx_msec_t now)
{
    if (an->until && (ngx_msec_int_t) (an->until - now) > 0) {
        return 0;
    }

    return (ngx_msec_int_t) (now - an->last)
           >= (ngx_msec_int_t) an->window * 1000;
}


/*
 * Counts one denial at now and returns the count within the window.  Slot
 * number s covers [s * window / 16, (s + 1) * window / 16) of the monotonic
 * clock, which all workers share; the ring holds slots head - 15 to head.
 */

static ngx_uint_t
ngx_http_airlock_add(ngx_http_airlock_node_t *an, ngx_msec_t now,
    ngx_uint_t window)
{
    uint64_t    s, i;
    ngx_uint_t  k, total;

    s = (uint64_t) now * NGX_HTTP_AIRLOCK_SLOTS / ((uint64_t) window * 1000);

    if (an->window != window) {

        /* a new node, or a reload changed the window: what was counted
           stays, as if it were counted now */

        total = ngx_http_airlock_sum(an, now);

        ngx_memzero(an->slot, sizeof(an->slot));
        an->slot[s % NGX_HTTP_AIRLOCK_SLOTS] = (uint32_t) total;
        an->head = s;
        an->window = (uint32_t) window;

    } else if (s > an->head) {

        if (s - an->head >= NGX_HTTP_AIRLOCK_SLOTS) {
            ngx_memzero(an->slot, sizeof(an->slot));

        } else {
            for (i = an->head + 1; i <= s; i++) {
                an->slot[i % NGX_HTTP_AIRLOCK_SLOTS] = 0;
            }
        }

        an->head = s;
    }

    /* a worker whose clock is a little behind counts in the newest slot */

    an->slot[an->head % NGX_HTTP_AIRLOCK_SLOTS]++;
    an->last = now;

    total = 0;

    for (k = 0; k < NGX_HTTP_AIRLOCK_SLOTS; k++) {
        total += an->slot[k];
    }

    return total;
}


/* the count within the window at now, changing nothing */

static ngx_uint_t
ngx_http_airlock_sum(ngx_http_airlock_node_t *an, ngx_msec_t now)
{
    uint64_t    s, k;
    ngx_uint_t  i, total;

    if (an->window == 0) {
        return 0;
    }

    s = (uint64_t) now * NGX_HTTP_AIRLOCK_SLOTS
        / ((uint64_t) an->window * 1000);

    total = 0;

    for (i = 0; i < NGX_HTTP_AIRLOCK_SLOTS && i <= an->head; i++) {
        k = an->head - i;

        if (k + NGX_HTTP_AIRLOCK_SLOTS > s) {
            total += an->slot[k % NGX_HTTP_AIRLOCK_SLOTS];
        }
    }

    return total;
}


char *
ngx_http_airlock_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_loc_conf_t  *alcf = conf;

    ngx_http_core_loc_conf_t     *clcf;
    ngx_http_airlock_srv_conf_t  *ascf;

    if (alcf->status) {
        return "is duplicate";
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_airlock_status_handler;

    alcf->status = 1;

    ascf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_airlock_module);
    ascf->admin = "airlock_status";

    return NGX_CONF_OK;
}


/*
 * The status tells who is denied what, and airlock_llm_metrics who spends
 * what on which model: a server with either may listen only on loopback
 * addresses and unix sockets, which the boxed clients cannot reach, and on
 * none that a server with Airlock or LLM locations listens on, where a
 * Host header would take a client to it.
 */

ngx_int_t
ngx_http_airlock_status_check(ngx_conf_t *cf)
{
    char                          *name;
    ngx_str_t                     *text;
    ngx_uint_t                     i, j, k, loopback;
    ngx_http_conf_port_t          *port;
    ngx_http_conf_addr_t          *addr;
    ngx_http_core_srv_conf_t     **cscfp, *status, *airlock;
    ngx_http_conf_ctx_t           *ctx;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_airlock_srv_conf_t   *ascf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    if (cmcf->ports == NULL) {
        return NGX_OK;
    }

    port = cmcf->ports->elts;

    for (i = 0; i < cmcf->ports->nelts; i++) {

        addr = port[i].addrs.elts;

        for (j = 0; j < port[i].addrs.nelts; j++) {

            name = NULL;
            status = NULL;
            airlock = NULL;
            cscfp = addr[j].servers.elts;

            for (k = 0; k < addr[j].servers.nelts; k++) {
                ctx = cscfp[k]->ctx;
                ascf = ctx->srv_conf[ngx_http_airlock_module.ctx_index];

                if (ascf->admin != NULL) {
                    status = cscfp[k];
                    name = ascf->admin;
                }

                if (ascf->airlock) {
                    airlock = cscfp[k];
                }
            }

            if (status == NULL) {
                continue;
            }

            text = &addr[j].opt.addr_text;

            if (airlock != NULL) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "\"%s\" in the server at %s:%ui "
                              "listens on \"%V\" with the Airlock server "
                              "at %s:%ui, where clients reach it: put it "
                              "on an admin listener of its own",
                              name, status->file_name, status->line, text,
                              airlock->file_name, airlock->line);
                return NGX_ERROR;
            }

            loopback = (text->len > 5
                        && ngx_strncmp(text->data, "unix:", 5) == 0)
                       || (text->len > 4
                           && ngx_strncmp(text->data, "127.", 4) == 0)
                       || (text->len > 6
                           && ngx_strncmp(text->data, "[::1]:", 6) == 0)
                       || (text->len > 12
                           && ngx_strncmp(text->data, "[::ffff:127.", 12)
                              == 0);

            if (!loopback) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "\"%s\" in the server at %s:%ui "
                              "listens on \"%V\", not a loopback address "
                              "or a unix socket: put it on an admin "
                              "listener the clients cannot reach",
                              name, status->file_name, status->line, text);
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


/*
 * airlock_status: the zone as JSON, for an admin listener.  The nodes are
 * copied under the lock, the clients' then the unknown peers', each most
 * recent first (at most STATUS_MAX of them,
 * out of at most STATUS_SCAN looked at, so the lock is held for a bounded
 * time whatever the zone's size) and written out once it is released.
 *
 *   {"time":"...","zone":{"name":"airlock","size":1048576,"pages":254,
 *    "free_pages":250,"nodes":3},
 *    "quarantined":[{"client":"agent","until":"...","left":598,
 *                    "reason":"no_route"}],
 *    "counters":[{"client":"agent","reason":"no_route","count":3,
 *                 "window":60},
 *                {"client":null,"peer":"10.0.0.7","reason":"client_unknown",
 *                 "count":1,"window":60},
 *                {"client":"agent","reason":null,"count":3,"window":60}],
 *    "truncated":false}
 */

static ngx_int_t
ngx_http_airlock_status_handler(ngx_http_request_t *r)
{
    u_char                        *p;
    size_t                         len, size;
    ngx_buf_t                     *b;
    ngx_int_t                      rc;
    ngx_uint_t                     i, n, max, seen, pages, pfree, nodes;
    ngx_uint_t                     first, truncated, k;
    ngx_msec_t                     now, wall;
    ngx_time_t                    *tp;
    ngx_queue_t                   *q, *queue;
    ngx_chain_t                    out;
    ngx_shm_zone_t                *shm_zone;
    ngx_http_airlock_node_t       *an;
    ngx_http_airlock_snap_t       *snap, *s;
    ngx_http_airlock_zone_ctx_t   *zc;
    ngx_http_airlock_main_conf_t  *amcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    /* no "100 Continue" for a body the answer does not need */

    rc = ngx_http_airlock_discard_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);
    shm_zone = amcf->zone;
    zc = shm_zone->data;

    /* a read without the lock, only to size the copy */

    max = ngx_min(zc->sh->nodes, NGX_HTTP_AIRLOCK_STATUS_MAX);

    snap = ngx_palloc(r->pool, (max + 1) * sizeof(ngx_http_airlock_snap_t));
    if (snap == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    n = 0;
    seen = 0;
    truncated = 0;
    now = ngx_current_msec;

    ngx_shmtx_lock(&zc->shpool->mutex);

    for (k = 0; k < 2 && !truncated; k++) {
        queue = (k == 0) ? &zc->sh->queue : &zc->sh->peers;

        for (q = ngx_queue_head(queue);
             q != ngx_queue_sentinel(queue);
             q = ngx_queue_next(q))
        {
            if (n == max || seen++ == NGX_HTTP_AIRLOCK_STATUS_SCAN) {
                truncated = 1;
                break;
            }

            an = ngx_queue_data(q, ngx_http_airlock_node_t, queue);
            s = &snap[n];

            s->kind = an->data[0];
            s->reason = an->data[1];
            s->qreason = an->qreason;
            s->len = (u_char) ngx_min((size_t) an->len - 2,
                                      NGX_HTTP_AIRLOCK_KEY_MAX);
            ngx_memcpy(s->name, an->data + 2, s->len);
            s->count = ngx_http_airlock_sum(an, now);
            s->window = an->window;
            s->left = (an->until && (ngx_msec_int_t) (an->until - now) > 0)
                      ? an->until - now : 0;

            if (s->count || s->left) {
                n++;
            }
        }
    }

    pages = (zc->shpool->end - zc->shpool->start) / ngx_pagesize;
    pfree = zc->shpool->pfree;
    nodes = zc->sh->nodes;

    ngx_shmtx_unlock(&zc->shpool->mutex);

    tp = ngx_timeofday();
    wall = (ngx_msec_t) tp->sec * 1000 + tp->msec;

    size = sizeof("{\"time\":\"\",\"zone\":{\"name\":\"\",\"size\":,"
                  "\"pages\":,\"free_pages\":,\"nodes\":},"
                  "\"quarantined\":[],\"counters\":[],"
                  "\"truncated\":false}" CRLF)
           + NGX_HTTP_AIRLOCK_TIME_LEN
           + al_json_escape_len((char *) shm_zone->shm.name.data,
                                shm_zone->shm.name.len)
           + 5 * NGX_INT_T_LEN;

    for (i = 0; i < n; i++) {
        len = sizeof(",{\"client\":\"\",\"peer\":\"\",\"reason\":\"\","
                     "\"count\":,\"window\":}") - 1
              + al_json_escape_len((char *) snap[i].name, snap[i].len)
              + 2 * NGX_HTTP_AIRLOCK_REASON_LEN + 2 * NGX_INT_T_LEN;

        if (snap[i].left) {
            len *= 2;
            len += NGX_HTTP_AIRLOCK_TIME_LEN;
        }

        size += len;
    }

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = b->last;

    p = ngx_cpymem(p, "{\"time\":\"", sizeof("{\"time\":\"") - 1);
    p = ngx_http_airlock_time(p, wall);
    p = ngx_cpymem(p, "\",\"zone\":{\"name\":\"",
                   sizeof("\",\"zone\":{\"name\":\"") - 1);
    p = (u_char *) al_json_escape((char *) p,
                                  (char *) shm_zone->shm.name.data,
                                  shm_zone->shm.name.len);
    p = ngx_sprintf(p, "\",\"size\":%uz,\"pages\":%ui,\"free_pages\":%ui,"
                    "\"nodes\":%ui},\"quarantined\":[",
                    shm_zone->shm.size, pages, pfree, nodes);

    first = 1;

    for (i = 0; i < n; i++) {
        s = &snap[i];

        if (s->left == 0 || s->reason != AL_REASON_NONE) {
            continue;
        }

        if (!first) {
            *p++ = ',';
        }

        first = 0;

        p = ngx_cpymem(p, "{", 1);
        p = ngx_http_airlock_status_name(p, s);
        p = ngx_cpymem(p, ",\"until\":\"", sizeof(",\"until\":\"") - 1);
        p = ngx_http_airlock_time(p, wall + s->left);
        p = ngx_sprintf(p, "\",\"left\":%M,\"reason\":\"%s\"}",
                        (s->left + 999) / 1000,
                        al_reason_name((al_reason_t) s->qreason));
    }

    p = ngx_cpymem(p, "],\"counters\":[", sizeof("],\"counters\":[") - 1);

    first = 1;

    for (i = 0; i < n; i++) {
        s = &snap[i];

        if (s->count == 0) {
            continue;
        }

        if (!first) {
            *p++ = ',';
        }

        first = 0;

        p = ngx_cpymem(p, "{", 1);
        p = ngx_http_airlock_status_name(p, s);

        if (s->reason == AL_REASON_NONE) {
            p = ngx_cpymem(p, ",\"reason\":null",
                           sizeof(",\"reason\":null") - 1);

        } else {
            p = ngx_sprintf(p, ",\"reason\":\"%s\"",
                            al_reason_name((al_reason_t) s->reason));
        }

        p = ngx_sprintf(p, ",\"count\":%ui,\"window\":%ui}",
                        s->count, s->window);
    }

    p = ngx_sprintf(p, "],\"truncated\":%s}" CRLF,
                    truncated ? "true" : "false");

    b->last = p;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    ngx_str_set(&r->headers_out.content_type, "application/json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static u_char *
ngx_http_airlock_status_name(u_char *p, ngx_http_airlock_snap_t *s)
{
    if (s->kind == NGX_HTTP_AIRLOCK_KEY_CLIENT) {
        p = ngx_cpymem(p, "\"client\":\"", sizeof("\"client\":\"") - 1);
        p = (u_char *) al_json_escape((char *) p, (char *) s->name,
                                      s->len);
        *p++ = '"';

        return p;
    }

    p = ngx_cpymem(p, "\"client\":null,\"peer\":\"",
                   sizeof("\"client\":null,\"peer\":\"") - 1);
    p = (u_char *) al_json_escape((char *) p, (char *) s->name, s->len);
    *p++ = '"';

    return p;
}


/*
 * Whether the zone was made anew and this process is the first to ask:
 * it then writes the journal's line of it (ngx_http_airlock_log_zone()).
 */

ngx_uint_t
ngx_http_airlock_zone_made(ngx_shm_zone_t *shm_zone)
{
    ngx_http_airlock_zone_ctx_t  *zc;

    zc = shm_zone->data;

    if (zc == NULL || zc->sh == NULL) {
        return 0;
    }

    return ngx_atomic_cmp_set(&zc->sh->made, 1, 0) ? 1 : 0;
}
