
/*
 * Airlock LLM gateway: the shared zone, budgets and counters.
 *
 * "airlock_llm_zone NAME SIZE [series=N]" holds, in the manner of
 * limit_req, a slab pool with one rbtree of two kinds of nodes:
 *
 *   budget  (provider, client): al_llm_budget_t, the minute, day and
 *           month windows and the requests in flight, so every worker
 *           admits against the same limits (al_llm_admit()); an LRU
 *           queue lets a full zone drop budgets that hold nothing (no
 *           request in flight, every window passed);
 *   series  (provider, client, model, status): calls, tokens and cost,
 *           what airlock_llm_metrics exposes.  Labels come from the policy
 *           (providers, clients, allowed models) and the status, so the
 *           number of series is bounded; past N (default 1000) or when
 *           the zone is full, updates of new series are counted in
 *           airlock_llm_series_dropped_total instead.
 *
 * The zone is reused as it is across reloads (budgets and counters go
 * on), and a zone given another size gets the old one's copied; a zone
 * made by a module of another layout refuses the reload.  The
 * mutex is held around one lookup and its update only.
 *
 * Series nodes are never freed (only idle budgets are), so each worker
 * keeps the series it counted last in a small cache of its own (in the
 * zone's per-cycle context: a reload starts with an empty one): a call
 * whose key matches its cached node, compared unlocked (a node's key
 * never changes), skips the hash and the tree walk.  Budget nodes may be
 * freed by any worker, so for them only the hash of recent keys is kept
 * (a hash is the key's, whatever the zone holds): admission still walks
 * the tree, under the lock.
 *
 * A request admitted holds a place in flight until
 * ngx_http_airlock_llm_settle() gives it back, from the log phase or,
 * for a request that never gets there, the request pool's cleanup: every
 * end of a request passes one of the two, and ctx->settled makes the
 * second a no-op.  Each place is also a small record in the zone naming
 * the process that holds it: a worker that dies mid-request (SIGKILL, a
 * crash) never gives its places back, and the worker the master starts
 * in its stead gives back those of processes that are gone
 * (ngx_http_airlock_llm_zone_reclaim()); what they reserved stays spent.
 * An old worker of a reload killed while it finishes is not replaced:
 * a call refused for its client's max_concurrent_requests looks at the
 * processes that hold its budget's places, and gives back those of the
 * ones gone (ngx_http_airlock_llm_sweep()), then tries once more.
 * A full zone without room for the record admits the call without one.
 *
 * The zone also binds the stored responses of the Responses API, and
 * their output items, to the clients that made them (al_llm_state.c
 * says why): a second rbtree of small nodes, (id, client), one for the
 * response and one for each output item, made as a 2xx answer's ids
 * pass through the filters and looked up when a request names an id as
 * its "previous_response_id" or in its "input".  They take at most half
 * the zone (so budgets and series always have room), one 128-byte slab
 * chunk each (256 for ids of more than about 70 bytes); at that bound,
 * or when the slab has no room, the least recently used are dropped,
 * with a warning once per worker, and a call that names a dropped one is
 * refused as one naming an unknown id is.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_llm_module.h"


#define NGX_HTTP_AIRLOCK_LLM_BUDGET    0
#define NGX_HTTP_AIRLOCK_LLM_SERIES    1

/* the alerts a worker sends once each */
#define NGX_HTTP_AIRLOCK_LLM_SAID_BUDGET  1     /* no room for a budget */
#define NGX_HTTP_AIRLOCK_LLM_SAID_SERIES  2     /* no room for a series */
#define NGX_HTTP_AIRLOCK_LLM_SAID_CAP     4     /* series= reached */
#define NGX_HTTP_AIRLOCK_LLM_SAID_FLIGHT  8     /* no room for a place */
#define NGX_HTTP_AIRLOCK_LLM_SAID_STATE   16    /* bindings dropped */
#define NGX_HTTP_AIRLOCK_LLM_SAID_BIND    32    /* no room for one */

/* the slab chunk a binding of a stored response takes, mostly */
#define NGX_HTTP_AIRLOCK_LLM_STATE_SIZE   128

/* bindings a full zone drops to make room for one, at most */
#define NGX_HTTP_AIRLOCK_LLM_STATE_DROP   8

/*
 * A call refused for max_concurrent_requests looks, under the lock, at
 * this many records of places (the oldest first) and checks, unlocked,
 * this many processes holding its budget's places
 */
#define NGX_HTTP_AIRLOCK_LLM_SWEEP       1024
#define NGX_HTTP_AIRLOCK_LLM_SWEEP_PIDS  8

/* series nodes cached per worker, a power of two */
#define NGX_HTTP_AIRLOCK_LLM_CACHE     16

#define NGX_HTTP_AIRLOCK_LLM_COST_HELP                                       \
    "# HELP airlock_llm_cost_usd_total LLM cost in USD, by provider, "      \
    "client and model (priced models).\n"                                   \
    "# TYPE airlock_llm_cost_usd_total counter\n"

#define NGX_HTTP_AIRLOCK_LLM_FLIGHT_HELP                                     \
    "# HELP airlock_llm_requests_in_flight LLM requests admitted and not "  \
    "finished, by provider and client (clients with limits).\n"            \
    "# TYPE airlock_llm_requests_in_flight gauge\n"

#define NGX_HTTP_AIRLOCK_LLM_KEY_MAX                                         \
    (1 + 3 * (AL_LLM_RECORD_STR_MAX + 1) + AL_LLM_MODEL_MAX + 4)

#define NGX_HTTP_AIRLOCK_LLM_BUDGET_KEY_MAX                                  \
    (1 + 2 * (AL_LLM_RECORD_STR_MAX + 1))

/*
 * checked when a zone is reused: the layout of the nodes below (0x4c4e:
 * with the bindings of stored responses)
 */
#define NGX_HTTP_AIRLOCK_LLM_MAGIC                                           \
    (0x4c4e0000 + sizeof(ngx_http_airlock_llm_node_t)                        \
     + (sizeof(ngx_http_airlock_llm_flight_t) << 8))


struct ngx_http_airlock_llm_node_s {
    u_char                        color;
    u_char                        kind;
    u_short                       len;          /* of data */
    ngx_queue_t                   queue;        /* budgets only */
    al_llm_budget_t               budget;
    uint64_t                      requests;
    uint64_t                      prompt;
    uint64_t                      completion;
    uint64_t                      cached;
    uint64_t                      cost;         /* picodollars */
    ngx_uint_t                    priced;       /* a priced model's */
    u_char                        data[1];      /* kind, names, status */
};


/*
 * A place in flight: the budget it is taken from (NULL: a spare of its
 * process, between two calls), and its process
 */
struct ngx_http_airlock_llm_flight_s {
    ngx_queue_t                   queue;
    ngx_http_airlock_llm_node_t  *node;
    ngx_http_airlock_llm_flight_t  *spare;      /* next of its process's */
    uint64_t                      start;        /* of pid: 0 unknown */
    ngx_pid_t                     pid;
};


/*
 * A stored response's binding: its id, then the name of the client whose
 * call made it, in data; the rbtree node's key is the id's crc32
 */
typedef struct {
    u_char                        color;
    u_char                        len;          /* of the id */
    u_char                        client_len;
    ngx_queue_t                   queue;
    u_char                        data[1];
} ngx_http_airlock_llm_state_t;


typedef struct {
    ngx_rbtree_t                  rbtree;
    ngx_rbtree_node_t             sentinel;
    ngx_queue_t                   queue;        /* budgets, recent first */
    ngx_queue_t                   flights;      /* places in flight */
    ngx_uint_t                    magic;
    ngx_uint_t                    series;
    ngx_uint_t                    budgets;
    uint64_t                      dropped;
    ngx_rbtree_t                  states;       /* bindings of stored
                                                   responses */
    ngx_rbtree_node_t             states_sentinel;
    ngx_queue_t                   states_queue; /* recent first */
    ngx_uint_t                    nstates;
} ngx_http_airlock_llm_shctx_t;


/* a budget key and its hash, as a worker computed it */
typedef struct {
    uint32_t                      hash;
    size_t                        len;          /* 0: none yet */
    u_char                        key[NGX_HTTP_AIRLOCK_LLM_BUDGET_KEY_MAX];
} ngx_http_airlock_llm_hash_t;


typedef struct {
    ngx_http_airlock_llm_shctx_t *sh;
    ngx_slab_pool_t              *shpool;
    ngx_uint_t                    series_max;
    ngx_uint_t                    states_max;   /* bindings: half the
                                                   zone */
    ngx_uint_t                    nomem;        /* what this worker said:
                                                   NGX_HTTP_AIRLOCK_LLM_
                                                   SAID_* */
    uint64_t                      start;        /* this worker's start
                                                   time, al_proc_started() */
    ngx_http_airlock_llm_flight_t  *spare;      /* this worker's records
                                                   of places, idle */

    /* series nodes this worker counted lately: never freed */
    ngx_http_airlock_llm_node_t  *cache[NGX_HTTP_AIRLOCK_LLM_CACHE];

    /* budget keys this worker admitted against lately */
    ngx_http_airlock_llm_hash_t   hashes[NGX_HTTP_AIRLOCK_LLM_CACHE];
} ngx_http_airlock_llm_zone_ctx_t;


/* a process that holds places: its pid and start time */
typedef struct {
    ngx_pid_t                     pid;
    uint64_t                      start;
} ngx_http_airlock_llm_proc_t;


/* a series as the metrics handler copies it under the lock */
typedef struct {
    u_char                       *key;
    size_t                        len;
    uint64_t                      requests;
    uint64_t                      prompt;
    uint64_t                      completion;
    uint64_t                      cached;
    uint64_t                      cost;
    uint64_t                      active;       /* budgets: in flight */
    ngx_uint_t                    priced;
} ngx_http_airlock_llm_snap_t;


static ngx_int_t ngx_http_airlock_llm_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_airlock_llm_zone_copy(ngx_shm_zone_t *shm_zone,
    ngx_http_airlock_llm_zone_ctx_t *zc);
static ngx_uint_t ngx_http_airlock_llm_node_copy(
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_http_airlock_llm_node_t *oln);
static void ngx_http_airlock_llm_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static void ngx_http_airlock_llm_state_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static ngx_uint_t ngx_http_airlock_llm_state_copy(
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_http_airlock_llm_state_t *ost);
static ngx_http_airlock_llm_state_t *ngx_http_airlock_llm_state_find(
    ngx_http_airlock_llm_zone_ctx_t *zc, uint32_t hash, u_char *id,
    size_t len);
static ngx_uint_t ngx_http_airlock_llm_state_drop(
    ngx_http_airlock_llm_zone_ctx_t *zc);
static ngx_http_airlock_llm_zone_ctx_t *ngx_http_airlock_llm_zone_ctx(
    ngx_http_request_t *r);
static void ngx_http_airlock_llm_finish_locked(
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_http_airlock_llm_ctx_t *ctx,
    const al_llm_usage_t *u, uint64_t cost);
static size_t ngx_http_airlock_llm_key(u_char *key, ngx_uint_t kind,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t status);
static ngx_http_airlock_llm_node_t *ngx_http_airlock_llm_lookup(
    ngx_http_airlock_llm_zone_ctx_t *zc, uint32_t hash, u_char *key,
    size_t len);
static uint32_t ngx_http_airlock_llm_budget_hash(
    ngx_http_airlock_llm_zone_ctx_t *zc, u_char *key, size_t len);
static ngx_http_airlock_llm_node_t *ngx_http_airlock_llm_get(
    ngx_http_airlock_llm_zone_ctx_t *zc, uint32_t hash, u_char *key,
    size_t len, time_t now);
static void ngx_http_airlock_llm_expire(ngx_http_airlock_llm_zone_ctx_t *zc,
    time_t now);
static ngx_http_airlock_llm_flight_t *ngx_http_airlock_llm_flight(
    ngx_http_airlock_llm_zone_ctx_t *zc, time_t now);
static ngx_uint_t ngx_http_airlock_llm_gone(ngx_pid_t pid, uint64_t start);
static ngx_uint_t ngx_http_airlock_llm_holders(
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_http_airlock_llm_node_t *ln,
    ngx_http_airlock_llm_proc_t *procs);
static ngx_uint_t ngx_http_airlock_llm_sweep(ngx_http_request_t *r,
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_http_airlock_llm_proc_t *procs,
    ngx_uint_t n);
static void ngx_http_airlock_llm_nomem(ngx_http_request_t *r,
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_uint_t what);
static ngx_int_t ngx_http_airlock_llm_metrics_handler(ngx_http_request_t *r);
static int ngx_libc_cdecl ngx_http_airlock_llm_snap_cmp(const void *one,
    const void *two);
static u_char *ngx_http_airlock_llm_labels(u_char *p,
    ngx_http_airlock_llm_snap_t *s, ngx_uint_t status);
static u_char *ngx_http_airlock_llm_label(u_char *p, const char *name,
    u_char *v, size_t len);
static u_char *ngx_http_airlock_llm_field(ngx_http_airlock_llm_snap_t *s,
    ngx_uint_t n, size_t *len);
static ngx_int_t ngx_http_airlock_llm_header(ngx_http_request_t *r,
    const char *name, u_char *value, size_t len);
static ngx_int_t ngx_http_airlock_llm_limit_pair(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const char *what, uint64_t limit,
    uint64_t remaining, unsigned reset);


char *
ngx_http_airlock_llm_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_llm_main_conf_t  *lmcf = conf;

    ssize_t                           size;
    ngx_int_t                         n;
    ngx_str_t                        *value;
    ngx_shm_zone_t                   *shm_zone;
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    if (lmcf->zone != NULL) {
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

    zc = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_llm_zone_ctx_t));
    if (zc == NULL) {
        return NGX_CONF_ERROR;
    }

    zc->series_max = NGX_HTTP_AIRLOCK_LLM_SERIES_MAX;

    if (cf->args->nelts == 4) {
        if (ngx_strncmp(value[3].data, "series=", 7) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[3]);
            return NGX_CONF_ERROR;
        }

        n = ngx_atoi(value[3].data + 7, value[3].len - 7);

        if (n <= 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[3]);
            return NGX_CONF_ERROR;
        }

        zc->series_max = n;
    }

    shm_zone = ngx_shared_memory_add(cf, &value[1], size,
                                     &ngx_http_airlock_llm_module);
    if (shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    if (shm_zone->data != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zone \"%V\" is already in use", &value[1]);
        return NGX_CONF_ERROR;
    }

    shm_zone->init = ngx_http_airlock_llm_init_zone;
    shm_zone->data = zc;

    lmcf->zone = shm_zone;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_airlock_llm_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_airlock_llm_zone_ctx_t  *ozc = data;

    size_t                            len;
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    zc = shm_zone->data;

    zc->states_max = shm_zone->shm.size / 2
                     / NGX_HTTP_AIRLOCK_LLM_STATE_SIZE;

    if (ozc != NULL) {
        if (ozc->sh->magic != NGX_HTTP_AIRLOCK_LLM_MAGIC) {
            ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                          "airlock_llm_zone \"%V\" was made by another "
                          "version of the module; restart nginx to "
                          "replace it", &shm_zone->shm.name);
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

    zc->sh = ngx_slab_alloc(zc->shpool, sizeof(ngx_http_airlock_llm_shctx_t));
    if (zc->sh == NULL) {
        return NGX_ERROR;
    }

    zc->shpool->data = zc->sh;

    ngx_rbtree_init(&zc->sh->rbtree, &zc->sh->sentinel,
                    ngx_http_airlock_llm_rbtree_insert_value);

    ngx_rbtree_init(&zc->sh->states, &zc->sh->states_sentinel,
                    ngx_http_airlock_llm_state_insert_value);

    ngx_queue_init(&zc->sh->queue);
    ngx_queue_init(&zc->sh->flights);
    ngx_queue_init(&zc->sh->states_queue);

    zc->sh->magic = NGX_HTTP_AIRLOCK_LLM_MAGIC;
    zc->sh->series = 0;
    zc->sh->budgets = 0;
    zc->sh->dropped = 0;
    zc->sh->nstates = 0;

    len = sizeof(" in airlock_llm_zone \"\"") + shm_zone->shm.name.len;

    zc->shpool->log_ctx = ngx_slab_alloc(zc->shpool, len);
    if (zc->shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(zc->shpool->log_ctx, " in airlock_llm_zone \"%V\"%Z",
                &shm_zone->shm.name);

    zc->shpool->log_nomem = 0;

    ngx_http_airlock_llm_zone_copy(shm_zone, zc);

    return NGX_OK;
}


/*
 * nginx reuses a zone across a reload only at its old size: a zone given
 * another size (what the "no room" alert asks for) is a new one.  The
 * budgets and counters of the zone it replaces, which the master still
 * maps while it reads the new configuration (ngx_cycle is the old cycle
 * then), are copied into it, so that such a reload keeps what clients
 * have spent, as any other reload does.  The calls the old workers still
 * serve end in the old zone: their reservations stay counted here (until
 * their windows pass), and their places in flight are not copied, as
 * nothing would ever give them back here.
 */

static void
ngx_http_airlock_llm_zone_copy(ngx_shm_zone_t *shm_zone,
    ngx_http_airlock_llm_zone_ctx_t *zc)
{
    ngx_uint_t                        i, nb, ns, nr;
    ngx_queue_t                      *q;
    ngx_shm_zone_t                   *oz;
    ngx_list_part_t                  *part;
    ngx_rbtree_node_t                *node, *root, *sentinel;
    ngx_http_airlock_llm_node_t      *ln;
    ngx_http_airlock_llm_state_t     *st;
    ngx_http_airlock_llm_shctx_t     *osh;
    ngx_http_airlock_llm_zone_ctx_t  *ozc;

    part = (ngx_list_part_t *) &ngx_cycle->shared_memory.part;
    oz = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return;
            }

            part = part->next;
            oz = part->elts;
            i = 0;
        }

        if (oz[i].tag == shm_zone->tag
            && oz[i].shm.name.len == shm_zone->shm.name.len
            && ngx_strncmp(oz[i].shm.name.data, shm_zone->shm.name.data,
                           shm_zone->shm.name.len)
               == 0)
        {
            break;
        }
    }

    ozc = oz[i].data;

    if (oz[i].shm.addr == NULL || ozc == NULL || ozc->sh == NULL
        || ozc->sh->magic != NGX_HTTP_AIRLOCK_LLM_MAGIC)
    {
        return;
    }

    osh = ozc->sh;
    nb = 0;
    ns = 0;
    nr = 0;

    ngx_shmtx_lock(&ozc->shpool->mutex);

    /* budgets first, the oldest first, each at the head, as made */

    for (q = ngx_queue_last(&osh->queue);
         q != ngx_queue_sentinel(&osh->queue);
         q = ngx_queue_prev(q))
    {
        ln = ngx_queue_data(q, ngx_http_airlock_llm_node_t, queue);

        if (!ngx_http_airlock_llm_node_copy(zc, ln)) {
            goto full;
        }

        nb++;
    }

    root = osh->rbtree.root;
    sentinel = osh->rbtree.sentinel;

    if (root != sentinel) {
        for (node = ngx_rbtree_min(root, sentinel);
             node != NULL;
             node = ngx_rbtree_next(&osh->rbtree, node))
        {
            ln = (ngx_http_airlock_llm_node_t *) &node->color;

            if (ln->kind != NGX_HTTP_AIRLOCK_LLM_SERIES) {
                continue;
            }

            if (!ngx_http_airlock_llm_node_copy(zc, ln)) {
                goto full;
            }

            ns++;
        }
    }

    zc->sh->dropped = osh->dropped;

    /*
     * the bindings of stored responses last, the most recent first, up
     * to the new zone's bound: a smaller zone keeps the newest
     */

    for (q = ngx_queue_head(&osh->states_queue);
         q != ngx_queue_sentinel(&osh->states_queue)
         && nr < zc->states_max;
         q = ngx_queue_next(q))
    {
        st = ngx_queue_data(q, ngx_http_airlock_llm_state_t, queue);

        if (!ngx_http_airlock_llm_state_copy(zc, st)) {
            break;
        }

        nr++;
    }

    ngx_shmtx_unlock(&ozc->shpool->mutex);

    ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                  "airlock_llm_zone \"%V\" of a new size: %ui budgets, "
                  "%ui series and %ui of %ui bindings of stored responses "
                  "copied from the old zone", &shm_zone->shm.name, nb, ns,
                  nr, osh->nstates);
    return;

full:

    ngx_shmtx_unlock(&ozc->shpool->mutex);

    ngx_log_error(NGX_LOG_ALERT, shm_zone->shm.log, 0,
                  "airlock_llm_zone \"%V\" of a new size is too small for "
                  "what the old zone holds: %ui budgets and %ui series "
                  "copied, the rest lost", &shm_zone->shm.name, nb, ns);
}


/* a binding of the old zone in the new one, behind those copied before */

static ngx_uint_t
ngx_http_airlock_llm_state_copy(ngx_http_airlock_llm_zone_ctx_t *zc,
    ngx_http_airlock_llm_state_t *ost)
{
    size_t                         size;
    ngx_rbtree_node_t             *node, *onode;
    ngx_http_airlock_llm_state_t  *st;

    onode = (ngx_rbtree_node_t *)
                ((u_char *) ost - offsetof(ngx_rbtree_node_t, color));

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_airlock_llm_state_t, data)
           + ost->len + ost->client_len;

    node = ngx_slab_alloc_locked(zc->shpool, size);
    if (node == NULL) {
        return 0;
    }

    node->key = onode->key;

    st = (ngx_http_airlock_llm_state_t *) &node->color;
    st->len = ost->len;
    st->client_len = ost->client_len;
    ngx_memcpy(st->data, ost->data, ost->len + ost->client_len);

    ngx_rbtree_insert(&zc->sh->states, node);
    ngx_queue_insert_tail(&zc->sh->states_queue, &st->queue);
    zc->sh->nstates++;

    return 1;
}


/* a node of the old zone, at the same key, in the new one */

static ngx_uint_t
ngx_http_airlock_llm_node_copy(ngx_http_airlock_llm_zone_ctx_t *zc,
    ngx_http_airlock_llm_node_t *oln)
{
    ngx_rbtree_node_t            *node, *onode;
    ngx_http_airlock_llm_node_t  *ln;

    onode = (ngx_rbtree_node_t *)
                ((u_char *) oln - offsetof(ngx_rbtree_node_t, color));

    node = ngx_slab_alloc_locked(zc->shpool,
                                 offsetof(ngx_rbtree_node_t, color)
                                 + offsetof(ngx_http_airlock_llm_node_t, data)
                                 + oln->len);
    if (node == NULL) {
        return 0;
    }

    node->key = onode->key;

    ln = (ngx_http_airlock_llm_node_t *) &node->color;
    ngx_memcpy(ln, oln, offsetof(ngx_http_airlock_llm_node_t, data)
                        + oln->len);

    ngx_rbtree_insert(&zc->sh->rbtree, node);

    if (ln->kind == NGX_HTTP_AIRLOCK_LLM_BUDGET) {
        ln->budget.active = 0;
        ngx_queue_insert_head(&zc->sh->queue, &ln->queue);
        zc->sh->budgets++;

    } else {
        zc->sh->series++;
    }

    return 1;
}


static void
ngx_http_airlock_llm_rbtree_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t            **p;
    ngx_http_airlock_llm_node_t   *ln, *lnt;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else { /* node->key == temp->key */

            ln = (ngx_http_airlock_llm_node_t *) &node->color;
            lnt = (ngx_http_airlock_llm_node_t *) &temp->color;

            p = (ngx_memn2cmp(ln->data, lnt->data, ln->len, lnt->len) < 0)
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


static void
ngx_http_airlock_llm_state_insert_value(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t             **p;
    ngx_http_airlock_llm_state_t   *st, *stt;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else { /* node->key == temp->key */

            st = (ngx_http_airlock_llm_state_t *) &node->color;
            stt = (ngx_http_airlock_llm_state_t *) &temp->color;

            p = (ngx_memn2cmp(st->data, stt->data, st->len, stt->len) < 0)
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


static ngx_http_airlock_llm_zone_ctx_t *
ngx_http_airlock_llm_zone_ctx(ngx_http_request_t *r)
{
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    lmcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_llm_module);

    return lmcf->zone != NULL ? lmcf->zone->data : NULL;
}


/*
 * Admits the request against every limit of the client, reserving need
 * (al_llm_admit()).  Returns NGX_OK (ctx->quota says what is left),
 * NGX_DECLINED when a limit refuses (ctx->quota says which and until
 * when), NGX_ERROR when the zone has no room.
 */

ngx_int_t
ngx_http_airlock_llm_reserve(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_amount_t *need)
{
    int                               rc;
    size_t                            len;
    time_t                            now;
    uint32_t                          hash;
    ngx_uint_t                        n, swept;
    ngx_http_airlock_llm_node_t      *ln;
    ngx_http_airlock_llm_flight_t    *fl;
    ngx_http_airlock_llm_zone_ctx_t  *zc;
    ngx_http_airlock_llm_proc_t       procs[NGX_HTTP_AIRLOCK_LLM_SWEEP_PIDS];
    u_char                            key[NGX_HTTP_AIRLOCK_LLM_KEY_MAX];

    zc = ngx_http_airlock_llm_zone_ctx(r);
    now = ngx_time();
    swept = 0;

    len = ngx_http_airlock_llm_key(key, NGX_HTTP_AIRLOCK_LLM_BUDGET, ctx, 0);
    hash = ngx_http_airlock_llm_budget_hash(zc, key, len);

again:

    ngx_shmtx_lock(&zc->shpool->mutex);

    ln = ngx_http_airlock_llm_get(zc, hash, key, len, now);

    if (ln == NULL) {
        ngx_shmtx_unlock(&zc->shpool->mutex);
        ngx_http_airlock_llm_nomem(r, zc, NGX_HTTP_AIRLOCK_LLM_SAID_BUDGET);
        return NGX_ERROR;
    }

    rc = al_llm_admit(&ln->budget, ctx->lc, (int64_t) now, need,
                      &ctx->quota);

    if (rc != 0) {

        /*
         * Refused for max_concurrent_requests: the places may be held by
         * processes that are gone and that no worker start followed (an
         * old worker of a reload killed while it finished its calls);
         * those are given back, and the call tried once more.
         */

        n = 0;

        if (ctx->quota.over_concurrent && !swept) {
            n = ngx_http_airlock_llm_holders(zc, ln, procs);
        }

        ngx_shmtx_unlock(&zc->shpool->mutex);

        if (n != 0 && ngx_http_airlock_llm_sweep(r, zc, procs, n) != 0) {
            swept = 1;
            goto again;
        }

        return NGX_DECLINED;
    }

    /*
     * Without room for the record of its place, the call is admitted all
     * the same (its budget is there): only a worker killed during it
     * would keep its place.
     */

    fl = ngx_http_airlock_llm_flight(zc, now);

    if (fl != NULL) {
        fl->node = ln;
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    if (fl == NULL) {
        ngx_http_airlock_llm_nomem(r, zc, NGX_HTTP_AIRLOCK_LLM_SAID_FLIGHT);
    }

    /* budget: the token headers of the filter have a budget to show */
    ctx->budget = (ctx->lc->tokens_per_minute || ctx->lc->tokens_per_day);
    ctx->admitted = 1;
    ctx->reserved = need->tokens;
    ctx->reserved_cost = need->cost;
    ctx->reserved_at = (time_t) ctx->quota.at;
    ctx->node = ln;
    ctx->flight = fl;

    return NGX_OK;
}


/*
 * Ends an admitted request: gives back its place in flight and replaces
 * the reservation with what the call used, u costing cost
 * (ngx_http_airlock_llm_cost()).  Once per request.  The log phase does
 * this in ngx_http_airlock_llm_close(), under the lock it counts with.
 */

void
ngx_http_airlock_llm_settle(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_usage_t *u, uint64_t cost)
{
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    if (!ctx->admitted || ctx->settled) {
        return;
    }

    zc = ngx_http_airlock_llm_zone_ctx(r);

    ngx_shmtx_lock(&zc->shpool->mutex);

    ngx_http_airlock_llm_finish_locked(zc, ctx, u, cost);

    ngx_shmtx_unlock(&zc->shpool->mutex);
}


/*
 * The zone's lock held: replaces the reservation of an admitted request
 * (the node admission found: its place in flight, al_llm_admit() counts
 * every admitted request as active, keeps it from expiring until now).
 */

static void
ngx_http_airlock_llm_finish_locked(ngx_http_airlock_llm_zone_ctx_t *zc,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_usage_t *u, uint64_t cost)
{
    al_llm_amount_t  reserved, actual;

    ctx->settled = 1;

    /* the record stays in the zone, a spare for this worker's next call */

    if (ctx->flight != NULL) {
        ctx->flight->node = NULL;
        ctx->flight->spare = zc->spare;
        zc->spare = ctx->flight;
        ctx->flight = NULL;
    }

    reserved.tokens = ctx->reserved;
    reserved.cost = ctx->reserved_cost;
    actual.tokens = u->total_tokens ? u->total_tokens
                                    : u->prompt_tokens + u->completion_tokens;
    actual.cost = cost;

    al_llm_finish(&ctx->node->budget, (int64_t) ngx_time(),
                  (int64_t) ctx->reserved_at, &reserved, &actual, 1);
}


/*
 * The log phase's end of a call: an admitted request settled with its
 * usage (ngx_http_airlock_llm_settle(), unless done already), and the
 * call, with its tokens, counted in its series, under one hold of the
 * zone's lock.  The cache slot is picked by what tells series apart
 * cheaply; whatever it holds is checked against the whole key, so a slot
 * two series share costs only a lookup.
 */

void
ngx_http_airlock_llm_close(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    size_t                            len;
    uint32_t                          hash;
    ngx_uint_t                        slot, what;
    ngx_rbtree_node_t                *node;
    ngx_http_airlock_llm_node_t      *ln;
    ngx_http_airlock_llm_zone_ctx_t  *zc;
    u_char                            key[NGX_HTTP_AIRLOCK_LLM_KEY_MAX];

    zc = ngx_http_airlock_llm_zone_ctx(r);

    if (zc == NULL) {
        /* no zone: nothing was admitted, nothing is counted */
        return;
    }

    len = ngx_http_airlock_llm_key(key, NGX_HTTP_AIRLOCK_LLM_SERIES, ctx,
                                   ctx->status);

    slot = (len + ctx->status + ctx->model.len
            + ((uintptr_t) ctx->client >> 4))
           & (NGX_HTTP_AIRLOCK_LLM_CACHE - 1);

    ln = zc->cache[slot];
    hash = 0;

    if (ln == NULL || ln->len != len || ngx_memcmp(ln->data, key, len) != 0)
    {
        ln = NULL;
        hash = ngx_crc32_short(key, len);
    }

    ngx_shmtx_lock(&zc->shpool->mutex);

    if (ctx->admitted && !ctx->settled) {
        ngx_http_airlock_llm_finish_locked(zc, ctx, &ctx->usage,
                                           ctx->cost);
    }

    if (ln != NULL) {
        goto count;
    }

    ln = ngx_http_airlock_llm_lookup(zc, hash, key, len);

    if (ln == NULL && zc->sh->series < zc->series_max) {
        node = ngx_slab_alloc_locked(zc->shpool,
                                     offsetof(ngx_rbtree_node_t, color)
                                     + offsetof(ngx_http_airlock_llm_node_t,
                                                data)
                                     + len);
        if (node != NULL) {
            node->key = hash;

            ln = (ngx_http_airlock_llm_node_t *) &node->color;
            ngx_memzero(ln, offsetof(ngx_http_airlock_llm_node_t, data));

            ln->kind = NGX_HTTP_AIRLOCK_LLM_SERIES;
            ln->len = (u_short) len;
            ngx_memcpy(ln->data, key, len);

            ngx_rbtree_insert(&zc->sh->rbtree, node);
            zc->sh->series++;
        }
    }

    if (ln == NULL) {
        what = (zc->sh->series >= zc->series_max)
               ? NGX_HTTP_AIRLOCK_LLM_SAID_CAP
               : NGX_HTTP_AIRLOCK_LLM_SAID_SERIES;
        zc->sh->dropped++;
        ngx_shmtx_unlock(&zc->shpool->mutex);
        ngx_http_airlock_llm_nomem(r, zc, what);
        return;
    }

    zc->cache[slot] = ln;

count:

    ln->requests++;
    ln->prompt += ctx->usage.prompt_tokens;
    ln->completion += ctx->usage.completion_tokens;
    ln->cached += ctx->usage.cached_tokens;

    if (ctx->price != NULL) {
        ln->priced = 1;
        ln->cost = (ln->cost > UINT64_MAX - ctx->cost) ? UINT64_MAX
                                                       : ln->cost + ctx->cost;
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);
}


/*
 * kind, provider NUL client NUL [model NUL status]; names are cut to the
 * lengths the usage log keeps, a model never inside a UTF-8 sequence: a
 * label with half a character would read as U+FFFD.
 */

static size_t
ngx_http_airlock_llm_key(u_char *key, ngx_uint_t kind,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t status)
{
    u_char          *p;
    size_t           n;
    const al_llm_t  *llm;

    llm = ctx->provider->llm;
    p = key;

    *p++ = (u_char) kind;

    n = ngx_min(llm->name.len, AL_LLM_RECORD_STR_MAX);
    p = ngx_cpymem(p, llm->name.data, n);
    *p++ = '\0';

    if (ctx->client != NULL) {
        n = ngx_min(ctx->client->name.len, AL_LLM_RECORD_STR_MAX);
        p = ngx_cpymem(p, ctx->client->name.data, n);
    }

    *p++ = '\0';

    if (kind == NGX_HTTP_AIRLOCK_LLM_BUDGET) {
        return p - key;
    }

    /* only an allowed model is set: client text is never a label */

    n = al_utf8_cut((char *) ctx->model.data, ctx->model.len,
                    AL_LLM_MODEL_MAX);
    p = ngx_cpymem(p, ctx->model.data, n);

    *p++ = '\0';

    status = ngx_min(status, 999);

    *p++ = (u_char) ('0' + status / 100);
    *p++ = (u_char) ('0' + status / 10 % 10);
    *p++ = (u_char) ('0' + status % 10);

    return p - key;
}


static ngx_http_airlock_llm_node_t *
ngx_http_airlock_llm_lookup(ngx_http_airlock_llm_zone_ctx_t *zc,
    uint32_t hash, u_char *key, size_t len)
{
    ngx_int_t                     rc;
    ngx_rbtree_node_t            *node, *sentinel;
    ngx_http_airlock_llm_node_t  *ln;

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

        ln = (ngx_http_airlock_llm_node_t *) &node->color;

        rc = ngx_memn2cmp(key, ln->data, len, (size_t) ln->len);

        if (rc == 0) {
            return ln;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


/* the crc32 of a budget key, from this worker's cache when it has it */

static uint32_t
ngx_http_airlock_llm_budget_hash(ngx_http_airlock_llm_zone_ctx_t *zc,
    u_char *key, size_t len)
{
    uint32_t                      hash;
    ngx_http_airlock_llm_hash_t  *h;

    /* the length and the client name's last byte tell most keys apart */

    h = &zc->hashes[(len + key[len - 2]) & (NGX_HTTP_AIRLOCK_LLM_CACHE - 1)];

    if (h->len == len && ngx_memcmp(h->key, key, len) == 0) {
        return h->hash;
    }

    hash = ngx_crc32_short(key, len);

    if (len <= sizeof(h->key)) {
        ngx_memcpy(h->key, key, len);
        h->len = len;
        h->hash = hash;
    }

    return hash;
}


/* a budget node, made when missing; the zone is locked */

static ngx_http_airlock_llm_node_t *
ngx_http_airlock_llm_get(ngx_http_airlock_llm_zone_ctx_t *zc, uint32_t hash,
    u_char *key, size_t len, time_t now)
{
    size_t                        size;
    ngx_rbtree_node_t            *node;
    ngx_http_airlock_llm_node_t  *ln;

    ln = ngx_http_airlock_llm_lookup(zc, hash, key, len);

    if (ln != NULL) {
        ngx_queue_remove(&ln->queue);
        ngx_queue_insert_head(&zc->sh->queue, &ln->queue);
        return ln;
    }

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_airlock_llm_node_t, data)
           + len;

    node = ngx_slab_alloc_locked(zc->shpool, size);

    if (node == NULL) {
        ngx_http_airlock_llm_expire(zc, now);

        node = ngx_slab_alloc_locked(zc->shpool, size);
        if (node == NULL) {
            return NULL;
        }
    }

    node->key = hash;

    ln = (ngx_http_airlock_llm_node_t *) &node->color;
    ngx_memzero(ln, offsetof(ngx_http_airlock_llm_node_t, data));

    ln->kind = NGX_HTTP_AIRLOCK_LLM_BUDGET;
    ln->len = (u_short) len;
    ngx_memcpy(ln->data, key, len);

    ngx_rbtree_insert(&zc->sh->rbtree, node);
    ngx_queue_insert_head(&zc->sh->queue, &ln->queue);
    zc->sh->budgets++;

    return ln;
}


/* frees budgets, oldest first, that hold nothing (al_llm_budget_idle()) */

static void
ngx_http_airlock_llm_expire(ngx_http_airlock_llm_zone_ctx_t *zc, time_t now)
{
    ngx_queue_t                  *q, *prev;
    ngx_rbtree_node_t            *node;
    ngx_http_airlock_llm_node_t  *ln;

    for (q = ngx_queue_last(&zc->sh->queue);
         q != ngx_queue_sentinel(&zc->sh->queue);
         q = prev)
    {
        prev = ngx_queue_prev(q);

        ln = ngx_queue_data(q, ngx_http_airlock_llm_node_t, queue);

        if (!al_llm_budget_idle(&ln->budget, (int64_t) now)) {
            continue;
        }

        ngx_queue_remove(q);
        zc->sh->budgets--;

        node = (ngx_rbtree_node_t *)
                   ((u_char *) ln - offsetof(ngx_rbtree_node_t, color));

        ngx_rbtree_delete(&zc->sh->rbtree, node);

        ngx_slab_free_locked(zc->shpool, node);
    }
}


/*
 * A record of a place in flight of this process, in the zone's queue;
 * the zone is locked.  One of its spares when it has one: a record is
 * made once, the first time a worker has that many calls in flight, and
 * stays the worker's, so a call costs no allocation (the zone's queue
 * holds the spares too, given back with the process's places once it is
 * gone).  NULL when the zone has no room, even once idle budgets are
 * freed.
 */

static ngx_http_airlock_llm_flight_t *
ngx_http_airlock_llm_flight(ngx_http_airlock_llm_zone_ctx_t *zc, time_t now)
{
    ngx_http_airlock_llm_flight_t  *fl;

    fl = zc->spare;

    if (fl != NULL) {
        zc->spare = fl->spare;
        return fl;
    }

    fl = ngx_slab_alloc_locked(zc->shpool,
                               sizeof(ngx_http_airlock_llm_flight_t));

    if (fl == NULL) {
        ngx_http_airlock_llm_expire(zc, now);

        fl = ngx_slab_alloc_locked(zc->shpool,
                                   sizeof(ngx_http_airlock_llm_flight_t));
        if (fl == NULL) {
            return NULL;
        }
    }

    fl->node = NULL;
    fl->spare = NULL;
    fl->pid = ngx_pid;
    fl->start = zc->start;

    ngx_queue_insert_head(&zc->sh->flights, &fl->queue);

    return fl;
}


/*
 * A worker starts, in the stead of one that died (a crash, SIGKILL), or
 * after a reload, or with nginx: the places in flight of processes that
 * are gone are given back (their budgets' requests in flight), and what
 * those calls reserved stays spent, as the provider may have had them.
 * The old workers of a reload still live, and keep theirs.  A place this
 * worker's pid holds is of a process that had the pid before: this one
 * has admitted nothing yet.
 */

void
ngx_http_airlock_llm_zone_reclaim(ngx_cycle_t *cycle)
{
    ngx_uint_t                         n;
    ngx_queue_t                       *q, *next;
    ngx_http_airlock_llm_flight_t     *fl;
    ngx_http_airlock_llm_zone_ctx_t   *zc;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    lmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_airlock_llm_module);

    if (lmcf == NULL || lmcf->zone == NULL) {
        return;
    }

    zc = lmcf->zone->data;

    if (zc == NULL || zc->sh == NULL) {
        return;
    }

    zc->start = al_proc_started(ngx_pid, 1);
    zc->spare = NULL;
    n = 0;

    ngx_shmtx_lock(&zc->shpool->mutex);

    for (q = ngx_queue_head(&zc->sh->flights);
         q != ngx_queue_sentinel(&zc->sh->flights);
         q = next)
    {
        next = ngx_queue_next(q);

        fl = ngx_queue_data(q, ngx_http_airlock_llm_flight_t, queue);

        if (fl->pid != ngx_pid && !ngx_http_airlock_llm_gone(fl->pid,
                                                             fl->start))
        {
            continue;
        }

        /* node NULL: a spare of the process, between two calls */

        if (fl->node != NULL) {
            if (fl->node->budget.active > 0) {
                fl->node->budget.active--;
            }

            n++;
        }

        ngx_queue_remove(q);
        ngx_slab_free_locked(zc->shpool, fl);
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    if (n != 0) {
        ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                      "airlock: %ui place%s in flight of processes that are "
                      "gone given back%s", n, (n == 1) ? "" : "s",
                      zc->shpool->log_ctx);
    }
}


/*
 * Whether the process that held a place is gone: kill(pid, 0) fails with
 * ESRCH for a pid no process has, and a process with the pid that started
 * at another time got it later.  A start time unknown either way is taken
 * for the same process: its place waits rather than be given back while
 * it may be in use.
 */

static ngx_uint_t
ngx_http_airlock_llm_gone(ngx_pid_t pid, uint64_t start)
{
    uint64_t  now;

    if (kill(pid, 0) == -1 && ngx_errno == NGX_ESRCH) {
        return 1;
    }

    if (start == 0) {
        return 0;
    }

    now = al_proc_started(pid, 0);

    return (now != 0 && now != start);
}


/*
 * The processes, other than this one, that hold places of the budget ln
 * in the zone's last NGX_HTTP_AIRLOCK_LLM_SWEEP records (the oldest: those
 * of the old workers of reloads), at most NGX_HTTP_AIRLOCK_LLM_SWEEP_PIDS
 * of them, into procs; the zone is locked.  A process whose start time is
 * unknown is left to the start-up sweep: its pid alone may name a new
 * process by the time its places are given back.
 */

static ngx_uint_t
ngx_http_airlock_llm_holders(ngx_http_airlock_llm_zone_ctx_t *zc,
    ngx_http_airlock_llm_node_t *ln, ngx_http_airlock_llm_proc_t *procs)
{
    ngx_uint_t                      i, n, seen;
    ngx_queue_t                    *q;
    ngx_http_airlock_llm_flight_t  *fl;

    n = 0;
    seen = 0;

    for (q = ngx_queue_last(&zc->sh->flights);
         q != ngx_queue_sentinel(&zc->sh->flights)
         && seen < NGX_HTTP_AIRLOCK_LLM_SWEEP;
         q = ngx_queue_prev(q), seen++)
    {
        fl = ngx_queue_data(q, ngx_http_airlock_llm_flight_t, queue);

        if (fl->node != ln || fl->pid == ngx_pid || fl->start == 0) {
            continue;
        }

        for (i = 0; i < n; i++) {
            if (procs[i].pid == fl->pid && procs[i].start == fl->start) {
                break;
            }
        }

        if (i < n) {
            continue;
        }

        procs[n].pid = fl->pid;
        procs[n].start = fl->start;

        if (++n == NGX_HTTP_AIRLOCK_LLM_SWEEP_PIDS) {
            break;
        }
    }

    return n;
}


/*
 * Of the n processes in procs, those gone (as the start-up sweep says,
 * checked with the zone unlocked) give back the places they held, in
 * the zone's last NGX_HTTP_AIRLOCK_LLM_SWEEP records, whatever their
 * budgets; their records are freed, spares with them.  Returns the
 * number of places given back.
 */

static ngx_uint_t
ngx_http_airlock_llm_sweep(ngx_http_request_t *r,
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_http_airlock_llm_proc_t *procs,
    ngx_uint_t n)
{
    ngx_uint_t                      i, k, given, seen;
    ngx_queue_t                    *q, *prev;
    ngx_http_airlock_llm_flight_t  *fl;

    k = 0;

    for (i = 0; i < n; i++) {
        if (ngx_http_airlock_llm_gone(procs[i].pid, procs[i].start)) {
            procs[k++] = procs[i];
        }
    }

    if (k == 0) {
        return 0;
    }

    given = 0;
    seen = 0;

    ngx_shmtx_lock(&zc->shpool->mutex);

    for (q = ngx_queue_last(&zc->sh->flights);
         q != ngx_queue_sentinel(&zc->sh->flights)
         && seen < NGX_HTTP_AIRLOCK_LLM_SWEEP;
         q = prev, seen++)
    {
        prev = ngx_queue_prev(q);

        fl = ngx_queue_data(q, ngx_http_airlock_llm_flight_t, queue);

        for (i = 0; i < k; i++) {
            if (procs[i].pid == fl->pid && procs[i].start == fl->start) {
                break;
            }
        }

        if (i == k) {
            continue;
        }

        if (fl->node != NULL) {
            if (fl->node->budget.active > 0) {
                fl->node->budget.active--;
            }

            given++;
        }

        ngx_queue_remove(q);
        ngx_slab_free_locked(zc->shpool, fl);
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    if (given != 0) {
        ngx_http_airlock_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                                   "airlock: %ui place%s in flight of "
                                   "processes that are gone given back%s",
                                   given, (given == 1) ? "" : "s",
                                   zc->shpool->log_ctx);
    }

    return given;
}


/*
 * Once per worker for each of: no room for a budget (the call is
 * answered 500), no room for a series, the series cap reached (the
 * call is counted in airlock_llm_series_dropped_total only), no room
 * for the record of a place in flight (the call is admitted); each says
 * what to change.
 */

static void
ngx_http_airlock_llm_nomem(ngx_http_request_t *r,
    ngx_http_airlock_llm_zone_ctx_t *zc, ngx_uint_t what)
{
    if (zc->nomem & what) {
        return;
    }

    zc->nomem |= what;

    if (what == NGX_HTTP_AIRLOCK_LLM_SAID_CAP) {
        ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                   "airlock: the counter series%s reached "
                                   "series=%ui: the calls of new series are "
                                   "counted in "
                                   "airlock_llm_series_dropped_total only; "
                                   "raise \"series=\" (a series takes 256 "
                                   "bytes of the zone)",
                                   zc->shpool->log_ctx, zc->series_max);
        return;
    }

    if (what == NGX_HTTP_AIRLOCK_LLM_SAID_STATE) {
        ngx_http_airlock_log_error(NGX_LOG_WARN, r->connection->log, 0,
                                   "airlock: the bindings of stored "
                                   "responses%s reached their bound (%ui, half "
                                   "the zone): the least recently used are "
                                   "dropped, and a call naming one (as its "
                                   "previous_response_id or an input item) is "
                                   "refused; make the zone larger to keep more",
                                   zc->shpool->log_ctx, zc->states_max);
        return;
    }

    if (what == NGX_HTTP_AIRLOCK_LLM_SAID_BIND) {
        ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                   "airlock: no room for the binding of a "
                                   "stored response or item%s: a call naming "
                                   "it is refused; make the zone larger",
                                   zc->shpool->log_ctx);
        return;
    }

    if (what == NGX_HTTP_AIRLOCK_LLM_SAID_FLIGHT) {
        ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                   "airlock: no room for the record of a call "
                                   "in flight%s: such calls are admitted, and "
                                   "a worker killed during one keeps its place "
                                   "until nginx restarts; make the zone larger",
                                   zc->shpool->log_ctx);
        return;
    }

    ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                               "airlock: no room for a %s node%s (series=%ui); "
                               "make the zone larger",
                               (what == NGX_HTTP_AIRLOCK_LLM_SAID_BUDGET)
                               ? "budget" : "series",
                               zc->shpool->log_ctx, zc->series_max);
}


char *
ngx_http_airlock_llm_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_llm_loc_conf_t  *llcf = conf;

    ngx_http_core_loc_conf_t     *clcf;
    ngx_http_airlock_srv_conf_t  *ascf;

    /* merge_loc_conf checks that the zone exists, once http{} is read */
    llcf->metrics = 1;

    /* and ngx_http_airlock_status_check() where it listens */
    ascf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_airlock_module);
    ascf->admin = "airlock_llm_metrics";

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_airlock_llm_metrics_handler;

    return NGX_CONF_OK;
}


/*
 * The counters in the Prometheus text format:
 *
 *   airlock_llm_requests_total{provider,client,model,status}
 *   airlock_llm_tokens_total{provider,client,model,kind}
 *   airlock_llm_cost_usd_total{provider,client,model}   priced models
 *   airlock_llm_requests_in_flight{provider,client}     limited clients
 *   airlock_llm_series_dropped_total
 *
 * The series and budgets are copied under the lock, then sorted and
 * printed.
 */

static ngx_int_t
ngx_http_airlock_llm_metrics_handler(ngx_http_request_t *r)
{
    size_t                            size, len;
    u_char                           *p, *keys, *p_status;
    uint64_t                          dropped, sum[3], cost;
    ngx_uint_t                        priced, first;
    u_char                            usd[AL_LLM_USD_MAX];
    ngx_int_t                         rc;
    ngx_buf_t                        *b;
    ngx_uint_t                        i, j, n, status;
    ngx_chain_t                       out;
    ngx_rbtree_node_t                *node, *root, *sentinel;
    u_char                           *v;
    ngx_http_airlock_llm_node_t      *ln;
    ngx_http_airlock_llm_snap_t      *snap, *s;
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    static const char  *kinds[] = { "prompt", "completion", "cached" };

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    /* no "100 Continue" for a body the answer does not need */

    rc = ngx_http_airlock_discard_body(r);

    if (rc != NGX_OK) {
        return rc;
    }

    zc = ngx_http_airlock_llm_zone_ctx(r);

    if (zc == NULL) {
        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: \"airlock_llm_metrics\" needs "
                                   "\"airlock_llm_zone\"");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * The series count can only grow while unlocked, and not past the
     * cap: room for the cap, or for the series there are when the zone
     * holds more (a reload lowered series=, or copied a zone of another
     * size: the series kept go on counting); budgets are as many as
     * (provider, client) pairs of the policies seen, some more for a
     * reload in between.
     */

    n = ngx_max(zc->series_max, zc->sh->series) + zc->sh->budgets + 64;

    snap = ngx_palloc(r->pool, n * sizeof(ngx_http_airlock_llm_snap_t));
    keys = ngx_palloc(r->pool, n * NGX_HTTP_AIRLOCK_LLM_KEY_MAX);

    if (snap == NULL || keys == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    i = 0;

    ngx_shmtx_lock(&zc->shpool->mutex);

    dropped = zc->sh->dropped;
    root = zc->sh->rbtree.root;
    sentinel = zc->sh->rbtree.sentinel;

    if (root != sentinel) {
        for (node = ngx_rbtree_min(root, sentinel);
             node != NULL && i < n;
             node = ngx_rbtree_next(&zc->sh->rbtree, node))
        {
            ln = (ngx_http_airlock_llm_node_t *) &node->color;

            s = &snap[i];
            s->key = keys + i * NGX_HTTP_AIRLOCK_LLM_KEY_MAX;
            s->len = ln->len;
            ngx_memcpy(s->key, ln->data, ln->len);
            s->requests = ln->requests;
            s->prompt = ln->prompt;
            s->completion = ln->completion;
            s->cached = ln->cached;
            s->cost = ln->cost;
            s->priced = ln->priced;
            s->active = (ln->kind == NGX_HTTP_AIRLOCK_LLM_BUDGET)
                        ? ln->budget.active : 0;
            i++;
        }
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    n = i;

    ngx_qsort(snap, n, sizeof(ngx_http_airlock_llm_snap_t),
              ngx_http_airlock_llm_snap_cmp);

    /* a value takes three times its length at most, and the labels */

    size = sizeof("# HELP airlock_llm_requests_total LLM gateway calls, by "
                  "provider, client, model and status.\n"
                  "# TYPE airlock_llm_requests_total counter\n"
                  "# HELP airlock_llm_tokens_total LLM tokens accounted, "
                  "by provider, client, model and kind.\n"
                  "# TYPE airlock_llm_tokens_total counter\n"
                  "# HELP airlock_llm_series_dropped_total Calls not "
                  "counted: the series cap or the zone was full.\n"
                  "# TYPE airlock_llm_series_dropped_total counter\n"
                  "airlock_llm_series_dropped_total \n")
           + sizeof(NGX_HTTP_AIRLOCK_LLM_COST_HELP)
           + sizeof(NGX_HTTP_AIRLOCK_LLM_FLIGHT_HELP)
           + NGX_INT64_LEN;

    for (i = 0; i < n; i++) {
        len = sizeof("airlock_llm_tokens_total{provider=\"\",client=\"\","
                     "model=\"\",kind=\"completion\"} \n")
              + 3 * snap[i].len + NGX_INT64_LEN + AL_LLM_USD_MAX;
        size += 5 * len;
    }

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    p = b->last;

    p = ngx_cpymem(p, "# HELP airlock_llm_requests_total LLM gateway calls, "
                   "by provider, client, model and status.\n"
                   "# TYPE airlock_llm_requests_total counter\n",
                   sizeof("# HELP airlock_llm_requests_total LLM gateway "
                          "calls, by provider, client, model and status.\n"
                          "# TYPE airlock_llm_requests_total counter\n")
                   - 1);

    /* budgets sort first (kind 0): the series start at first */

    for (first = 0; first < n; first++) {
        if (snap[first].key[0] == NGX_HTTP_AIRLOCK_LLM_SERIES) {
            break;
        }
    }

    for (i = first; i < n; i++) {
        p_status = ngx_http_airlock_llm_field(&snap[i], 4, &len);
        status = ngx_atoi(p_status, len);

        p = ngx_cpymem(p, "airlock_llm_requests_total{",
                       sizeof("airlock_llm_requests_total{") - 1);
        p = ngx_http_airlock_llm_labels(p, &snap[i], status);
        p = ngx_sprintf(p, "} %uL\n", snap[i].requests);
    }

    p = ngx_cpymem(p, "# HELP airlock_llm_tokens_total LLM tokens "
                   "accounted, by provider, client, model and kind.\n"
                   "# TYPE airlock_llm_tokens_total counter\n",
                   sizeof("# HELP airlock_llm_tokens_total LLM tokens "
                          "accounted, by provider, client, model and kind.\n"
                          "# TYPE airlock_llm_tokens_total counter\n") - 1);

    /* the series of one (provider, client, model) are adjacent: summed */

    for (i = first; i < n; i = j) {
        sum[0] = 0;
        sum[1] = 0;
        sum[2] = 0;

        for (j = i; j < n; j++) {
            (void) ngx_http_airlock_llm_field(&snap[j], 4, &len);

            if (snap[j].len != snap[i].len
                || ngx_memcmp(snap[j].key, snap[i].key, snap[i].len - len)
                   != 0)
            {
                break;
            }

            sum[0] += snap[j].prompt;
            sum[1] += snap[j].completion;
            sum[2] += snap[j].cached;
        }

        for (status = 0; status < 3; status++) {
            p = ngx_cpymem(p, "airlock_llm_tokens_total{",
                           sizeof("airlock_llm_tokens_total{") - 1);
            p = ngx_http_airlock_llm_labels(p, &snap[i], 0);
            p = ngx_sprintf(p, ",kind=\"%s\"} %uL\n", kinds[status],
                            sum[status]);
        }
    }

    p = ngx_cpymem(p, NGX_HTTP_AIRLOCK_LLM_COST_HELP,
                   sizeof(NGX_HTTP_AIRLOCK_LLM_COST_HELP) - 1);

    for (i = first; i < n; i = j) {
        cost = 0;
        priced = 0;

        for (j = i; j < n; j++) {
            (void) ngx_http_airlock_llm_field(&snap[j], 4, &len);

            if (snap[j].len != snap[i].len
                || ngx_memcmp(snap[j].key, snap[i].key, snap[i].len - len)
                   != 0)
            {
                break;
            }

            cost = (cost > UINT64_MAX - snap[j].cost) ? UINT64_MAX
                                                      : cost + snap[j].cost;
            priced |= snap[j].priced;
        }

        if (!priced) {
            continue;
        }

        len = al_llm_usd_format(cost, (char *) usd, sizeof(usd));

        p = ngx_cpymem(p, "airlock_llm_cost_usd_total{",
                       sizeof("airlock_llm_cost_usd_total{") - 1);
        p = ngx_http_airlock_llm_labels(p, &snap[i], 0);
        p = ngx_sprintf(p, "} %*s\n", ngx_min(len, sizeof(usd) - 1), usd);
    }

    p = ngx_cpymem(p, NGX_HTTP_AIRLOCK_LLM_FLIGHT_HELP,
                   sizeof(NGX_HTTP_AIRLOCK_LLM_FLIGHT_HELP) - 1);

    for (i = 0; i < first; i++) {
        p = ngx_cpymem(p, "airlock_llm_requests_in_flight{",
                       sizeof("airlock_llm_requests_in_flight{") - 1);

        v = ngx_http_airlock_llm_field(&snap[i], 1, &len);
        p = ngx_http_airlock_llm_label(p, "provider=\"", v, len);

        v = ngx_http_airlock_llm_field(&snap[i], 2, &len);
        p = ngx_http_airlock_llm_label(p, ",client=\"", v, len);

        p = ngx_sprintf(p, "} %uL\n", snap[i].active);
    }

    p = ngx_sprintf(p, "# HELP airlock_llm_series_dropped_total Calls not "
                    "counted: the series cap or the zone was full.\n"
                    "# TYPE airlock_llm_series_dropped_total counter\n"
                    "airlock_llm_series_dropped_total %uL\n", dropped);

    b->last = p;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");
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


/* keys sort as (provider, client, model, status): NUL ends each field */

static int ngx_libc_cdecl
ngx_http_airlock_llm_snap_cmp(const void *one, const void *two)
{
    const ngx_http_airlock_llm_snap_t  *a = one;
    const ngx_http_airlock_llm_snap_t  *b = two;

    return ngx_memn2cmp(a->key, b->key, a->len, b->len);
}


/* provider="...",client="...",model="..."[,status="200"] */

static u_char *
ngx_http_airlock_llm_labels(u_char *p, ngx_http_airlock_llm_snap_t *s,
    ngx_uint_t status)
{
    u_char  *v;
    size_t   len;

    v = ngx_http_airlock_llm_field(s, 1, &len);
    p = ngx_http_airlock_llm_label(p, "provider=\"", v, len);

    v = ngx_http_airlock_llm_field(s, 2, &len);
    p = ngx_http_airlock_llm_label(p, ",client=\"", v, len);

    v = ngx_http_airlock_llm_field(s, 3, &len);
    p = ngx_http_airlock_llm_label(p, ",model=\"", v, len);

    if (status) {
        p = ngx_sprintf(p, ",status=\"%03ui\"", status);
    }

    return p;
}


/*
 * A label value, escaped as the exposition format wants, and valid UTF-8:
 * Prometheus refuses the whole scrape for one label value that is not.
 * The values are policy names (UTF-8, as the YAML reader takes them), cut
 * to the key's limits at a character's boundary; a byte of no valid
 * sequence, should one come, is written as U+FFFD (three bytes at most
 * for one).
 */

static u_char *
ngx_http_airlock_llm_label(u_char *p, const char *name, u_char *v,
    size_t len)
{
    size_t  k;

    p = ngx_cpymem(p, name, ngx_strlen(name));

    while (len) {
        if (*v == '\\' || *v == '"') {
            *p++ = '\\';
            *p++ = *v;
            k = 1;

        } else if (*v == '\n') {
            *p++ = '\\';
            *p++ = 'n';
            k = 1;

        } else if (*v < 0x80) {
            *p++ = *v;
            k = 1;

        } else {
            k = al_utf8_len(v, len);

            if (k == 0) {
                p = ngx_cpymem(p, "\xef\xbf\xbd", 3);
                k = 1;

            } else {
                p = ngx_cpymem(p, v, k);
            }
        }

        v += k;
        len -= k;
    }

    *p++ = '"';

    return p;
}


/* field n of a series key: 1 provider, 2 client, 3 model, 4 status */

static u_char *
ngx_http_airlock_llm_field(ngx_http_airlock_llm_snap_t *s, ngx_uint_t n,
    size_t *len)
{
    u_char  *p, *last, *start;

    p = s->key + 1;
    last = s->key + s->len;

    for ( ;; ) {
        start = p;

        while (p < last && *p != '\0') {
            p++;
        }

        if (--n == 0 || p == last) {
            *len = p - start;
            return start;
        }

        p++;
    }
}


/*
 * Request rate-limit headers as the provider sends them, for a client
 * with requests_per_minute: on every answer to an admitted request and on
 * a refusal (the response filter adds the token ones to answers).
 * OpenAI: x-ratelimit-{limit,remaining,reset}-requests, reset as "23s";
 * Anthropic: anthropic-ratelimit-requests-{limit,remaining,reset}, reset
 * in RFC 3339.  Resets are taken from the clock now, not at admission.
 */

ngx_int_t
ngx_http_airlock_llm_limit_headers(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    time_t           now;
    al_llm_quota_t  *q;

    q = &ctx->quota;
    now = ngx_time();

    if (q->requests_limit) {
        if (ngx_http_airlock_llm_limit_pair(r, ctx, "requests",
                                 q->requests_limit, q->requests_remaining,
                                 al_llm_quota_reset(q->minute_end,
                                                    AL_LLM_MINUTE,
                                                    (int64_t) now))
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* limit, remaining and reset of one kind ("requests", "tokens") */

static ngx_int_t
ngx_http_airlock_llm_limit_pair(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const char *what, uint64_t limit,
    uint64_t remaining, unsigned reset)
{
    u_char     *p;
    ngx_tm_t    tm;
    ngx_int_t   rc;
    u_char      name[64], v[NGX_INT64_LEN + 1];
    u_char      ts[sizeof("1970-01-01T00:00:00Z")];

    if (ctx->provider->llm->kind == AL_LLM_ANTHROPIC) {
        p = ngx_sprintf(name, "anthropic-ratelimit-%s-limit%Z", what);
        rc = ngx_http_airlock_llm_header(r, (char *) name, v,
                                         ngx_sprintf(v, "%uL", limit) - v);

        if (rc == NGX_OK) {
            p = ngx_sprintf(name, "anthropic-ratelimit-%s-remaining%Z",
                            what);
            rc = ngx_http_airlock_llm_header(r, (char *) name, v,
                                             ngx_sprintf(v, "%uL", remaining)
                                             - v);
        }

        if (rc == NGX_OK) {
            ngx_gmtime(ngx_time() + reset, &tm);
            p = ngx_sprintf(ts, "%4d-%02d-%02dT%02d:%02d:%02dZ",
                            tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                            tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec);
            (void) ngx_sprintf(name, "anthropic-ratelimit-%s-reset%Z", what);
            rc = ngx_http_airlock_llm_header(r, (char *) name, ts, p - ts);
        }

        return rc;
    }

    p = ngx_sprintf(name, "x-ratelimit-limit-%s%Z", what);
    rc = ngx_http_airlock_llm_header(r, (char *) name, v,
                                     ngx_sprintf(v, "%uL", limit) - v);

    if (rc == NGX_OK) {
        p = ngx_sprintf(name, "x-ratelimit-remaining-%s%Z", what);
        rc = ngx_http_airlock_llm_header(r, (char *) name, v,
                                         ngx_sprintf(v, "%uL", remaining)
                                         - v);
    }

    if (rc == NGX_OK) {
        p = ngx_sprintf(name, "x-ratelimit-reset-%s%Z", what);
        rc = ngx_http_airlock_llm_header(r, (char *) name, v,
                                         ngx_sprintf(v, "%ud", reset) - v);
    }

    (void) p;

    return rc;
}


/* a response header; name and value are copied to the request pool */

static ngx_int_t
ngx_http_airlock_llm_header(ngx_http_request_t *r, const char *name,
    u_char *value, size_t len)
{
    size_t            n;
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    n = ngx_strlen(name);

    h->key.data = ngx_pnalloc(r->pool, n);
    h->value.data = ngx_pnalloc(r->pool, len + 1);

    if (h->key.data == NULL || h->value.data == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    ngx_memcpy(h->key.data, name, n);
    h->key.len = n;

    ngx_memcpy(h->value.data, value, len);
    h->value.len = len;

    /* OpenAI's reset is a duration: "23s" */
    if (ngx_strncmp(name, "x-ratelimit-reset-", 18) == 0) {
        h->value.data[len] = 's';
        h->value.len++;
    }

    h->hash = 1;

    return NGX_OK;
}


/*
 * Binds the id of a stored response or output item (len bytes, at most
 * AL_LLM_STATE_ID_MAX) to the request's client.  An id bound already
 * keeps its client (the provider makes each id once) and becomes the
 * most recently used.
 * Returns NGX_OK, or NGX_DECLINED when the zone had no room (logged).
 */

ngx_int_t
ngx_http_airlock_llm_state_bind(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, u_char *id, size_t len)
{
    size_t                            size;
    uint32_t                          hash;
    ngx_uint_t                        i, dropped;
    ngx_rbtree_node_t                *node;
    const al_str_t                   *client;
    ngx_http_airlock_llm_state_t     *st;
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    zc = ngx_http_airlock_llm_zone_ctx(r);

    if (zc == NULL || ctx->client == NULL || len == 0
        || len > AL_LLM_STATE_ID_MAX || ctx->client->name.len > 255)
    {
        return NGX_DECLINED;
    }

    client = &ctx->client->name;
    hash = ngx_crc32_short(id, len);

    size = offsetof(ngx_rbtree_node_t, color)
           + offsetof(ngx_http_airlock_llm_state_t, data) + len + client->len;

    dropped = 0;

    ngx_shmtx_lock(&zc->shpool->mutex);

    st = ngx_http_airlock_llm_state_find(zc, hash, id, len);

    if (st != NULL) {
        ngx_queue_remove(&st->queue);
        ngx_queue_insert_head(&zc->sh->states_queue, &st->queue);
        ngx_shmtx_unlock(&zc->shpool->mutex);
        return NGX_OK;
    }

    if (zc->sh->nstates >= zc->states_max) {
        dropped += ngx_http_airlock_llm_state_drop(zc);
    }

    node = ngx_slab_alloc_locked(zc->shpool, size);

    for (i = 0; node == NULL && i < NGX_HTTP_AIRLOCK_LLM_STATE_DROP; i++) {
        if (!ngx_http_airlock_llm_state_drop(zc)) {
            break;
        }

        dropped++;
        node = ngx_slab_alloc_locked(zc->shpool, size);
    }

    if (node == NULL) {
        ngx_shmtx_unlock(&zc->shpool->mutex);
        ngx_http_airlock_llm_nomem(r, zc, NGX_HTTP_AIRLOCK_LLM_SAID_BIND);
        return NGX_DECLINED;
    }

    node->key = hash;

    st = (ngx_http_airlock_llm_state_t *) &node->color;
    st->len = (u_char) len;
    st->client_len = (u_char) client->len;
    ngx_memcpy(st->data, id, len);
    ngx_memcpy(st->data + len, client->data, client->len);

    ngx_rbtree_insert(&zc->sh->states, node);
    ngx_queue_insert_head(&zc->sh->states_queue, &st->queue);
    zc->sh->nstates++;

    ngx_shmtx_unlock(&zc->shpool->mutex);

    if (dropped) {
        ngx_http_airlock_llm_nomem(r, zc, NGX_HTTP_AIRLOCK_LLM_SAID_STATE);
    }

    return NGX_OK;
}


/*
 * Whose the stored response or item id is: NGX_OK when it is bound to the
 * request's client (it becomes the most recently used), NGX_DECLINED when
 * to another client, NGX_DONE when to none (never seen, dropped, or made
 * before the zone kept bindings).
 */

ngx_int_t
ngx_http_airlock_llm_state_owner(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, u_char *id, size_t len)
{
    uint32_t                          hash;
    ngx_int_t                         rc;
    const al_str_t                   *client;
    ngx_http_airlock_llm_state_t     *st;
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    zc = ngx_http_airlock_llm_zone_ctx(r);

    if (zc == NULL || ctx->client == NULL || len == 0
        || len > AL_LLM_STATE_ID_MAX)
    {
        return NGX_DONE;
    }

    client = &ctx->client->name;
    hash = ngx_crc32_short(id, len);

    ngx_shmtx_lock(&zc->shpool->mutex);

    st = ngx_http_airlock_llm_state_find(zc, hash, id, len);

    if (st == NULL) {
        rc = NGX_DONE;

    } else if (st->client_len == client->len
               && ngx_memcmp(st->data + st->len, client->data, client->len)
                  == 0)
    {
        ngx_queue_remove(&st->queue);
        ngx_queue_insert_head(&zc->sh->states_queue, &st->queue);
        rc = NGX_OK;

    } else {
        rc = NGX_DECLINED;
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    return rc;
}


/*
 * Whose the n ids are (each at ids[i].at in body, ids[i].len bytes; len
 * 0: no id that could be bound), in order, under one lock: NGX_OK when
 * every one is bound to the request's client (each becomes the most
 * recently used), else what ngx_http_airlock_llm_state_owner() says of
 * the first that is not, its place in *first (those before it were
 * made the most recently used, as one call each would).
 */

ngx_int_t
ngx_http_airlock_llm_state_owners(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const u_char *body,
    const al_llm_state_id_t *ids, ngx_uint_t n, ngx_uint_t *first)
{
    u_char                           *id;
    size_t                            len;
    uint32_t                          hash[AL_LLM_STATE_REFS + 1];
    ngx_int_t                         rc;
    ngx_uint_t                        i, m;
    const al_str_t                   *client;
    ngx_http_airlock_llm_state_t     *st;
    ngx_http_airlock_llm_zone_ctx_t  *zc;

    *first = 0;

    if (n == 0) {
        return NGX_OK;
    }

    zc = ngx_http_airlock_llm_zone_ctx(r);

    if (zc == NULL || ctx->client == NULL
        || n > AL_LLM_STATE_REFS + 1)
    {
        return NGX_DONE;
    }

    client = &ctx->client->name;

    for (i = 0; i < n; i++) {
        if (ids[i].len == 0 || ids[i].len > AL_LLM_STATE_ID_MAX) {
            break;
        }

        hash[i] = ngx_crc32_short((u_char *) body + ids[i].at, ids[i].len);
    }

    m = i;                      /* looked up: the ids before one of none */
    rc = NGX_DONE;

    ngx_shmtx_lock(&zc->shpool->mutex);

    for (i = 0; i < m; i++) {
        id = (u_char *) body + ids[i].at;
        len = ids[i].len;

        st = ngx_http_airlock_llm_state_find(zc, hash[i], id, len);

        if (st == NULL) {
            rc = NGX_DONE;
            break;
        }

        if (st->client_len != client->len
            || ngx_memcmp(st->data + st->len, client->data, client->len)
               != 0)
        {
            rc = NGX_DECLINED;
            break;
        }

        ngx_queue_remove(&st->queue);
        ngx_queue_insert_head(&zc->sh->states_queue, &st->queue);
    }

    ngx_shmtx_unlock(&zc->shpool->mutex);

    *first = i;

    return (i == n) ? NGX_OK : rc;
}


static ngx_http_airlock_llm_state_t *
ngx_http_airlock_llm_state_find(ngx_http_airlock_llm_zone_ctx_t *zc,
    uint32_t hash, u_char *id, size_t len)
{
    ngx_int_t                      rc;
    ngx_rbtree_node_t             *node, *sentinel;
    ngx_http_airlock_llm_state_t  *st;

    node = zc->sh->states.root;
    sentinel = zc->sh->states.sentinel;

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

        st = (ngx_http_airlock_llm_state_t *) &node->color;

        rc = ngx_memn2cmp(id, st->data, len, (size_t) st->len);

        if (rc == 0) {
            return st;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


/* frees the least recently used binding, under the lock; 0: none */

static ngx_uint_t
ngx_http_airlock_llm_state_drop(ngx_http_airlock_llm_zone_ctx_t *zc)
{
    ngx_queue_t                   *q;
    ngx_rbtree_node_t             *node;
    ngx_http_airlock_llm_state_t  *st;

    if (ngx_queue_empty(&zc->sh->states_queue)) {
        return 0;
    }

    q = ngx_queue_last(&zc->sh->states_queue);
    ngx_queue_remove(q);

    st = ngx_queue_data(q, ngx_http_airlock_llm_state_t, queue);
    node = (ngx_rbtree_node_t *)
               ((u_char *) st - offsetof(ngx_rbtree_node_t, color));

    ngx_rbtree_delete(&zc->sh->states, node);
    ngx_slab_free_locked(zc->shpool, node);
    zc->sh->nstates--;

    return 1;
}
