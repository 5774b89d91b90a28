/*
 * A grow-only pool: a compiled policy is allocated from one pool and freed
 * at once.  Resources that are not pool memory (regexes, guarded secret
 * memory) are released through cleanups, in reverse order of registration.
 */

#include <stdlib.h>
#include <string.h>

#include "al_internal.h"


#define AL_POOL_CHUNK  (64 * 1024)


typedef struct al_pool_chunk_s  al_pool_chunk_t;

struct al_pool_chunk_s {
    al_pool_chunk_t  *next;
    size_t            used;
    size_t            size;
    max_align_t       data[];
};

typedef struct al_pool_cln_s  al_pool_cln_t;

struct al_pool_cln_s {
    al_pool_cln_t    *next;
    void            (*fn)(void *);
    void             *data;
};

struct al_pool_s {
    al_pool_chunk_t  *chunks;
    al_pool_cln_t    *cleanups;
};


al_pool_t *
al_pool_create(void)
{
    return calloc(1, sizeof(al_pool_t));
}


void
al_pool_destroy(al_pool_t *pool)
{
    al_pool_cln_t    *c;
    al_pool_chunk_t  *ch, *next;

    if (pool == NULL) {
        return;
    }

    for (c = pool->cleanups; c != NULL; c = c->next) {
        c->fn(c->data);
    }

    for (ch = pool->chunks; ch != NULL; ch = next) {
        next = ch->next;
        free(ch);
    }

    free(pool);
}


void *
al_palloc(al_pool_t *pool, size_t size)
{
    size_t            want, csize;
    char             *p;
    al_pool_chunk_t  *ch;

    want = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    if (want < size) {
        return NULL;
    }

    ch = pool->chunks;

    if (ch != NULL) {
        /* after packed strings */
        ch->used = (ch->used + sizeof(max_align_t) - 1)
                   & ~(sizeof(max_align_t) - 1);
        if (ch->used > ch->size) {
            ch->used = ch->size;
        }
    }

    if (ch == NULL || ch->size - ch->used < want) {
        csize = want > AL_POOL_CHUNK ? want : AL_POOL_CHUNK;
        ch = malloc(sizeof(al_pool_chunk_t) + csize);
        if (ch == NULL) {
            return NULL;
        }
        ch->used = 0;
        ch->size = csize;
        ch->next = pool->chunks;
        pool->chunks = ch;
    }

    p = (char *) ch->data + ch->used;
    ch->used += want;
    memset(p, 0, size);

    return p;
}


/* strings need no alignment: they are packed */

char *
al_pstrndup(al_pool_t *pool, const char *s, size_t len)
{
    char             *p;
    al_pool_chunk_t  *ch;

    ch = pool->chunks;

    if (ch != NULL && len < ch->size - ch->used) {
        p = (char *) ch->data + ch->used;
        ch->used += len + 1;
        memcpy(p, s, len);
        p[len] = '\0';
        return p;
    }

    p = al_palloc(pool, len + 1);
    if (p == NULL) {
        return NULL;
    }

    memcpy(p, s, len);
    p[len] = '\0';

    return p;
}


int
al_pool_cleanup(al_pool_t *pool, void (*fn)(void *), void *data)
{
    al_pool_cln_t  *c;

    c = al_palloc(pool, sizeof(al_pool_cln_t));
    if (c == NULL) {
        return -1;
    }

    c->fn = fn;
    c->data = data;
    c->next = pool->cleanups;
    pool->cleanups = c;

    return 0;
}


size_t
al_edit_distance(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t  i, j, prev, cur, up, d[64];

    if (alen >= 63 || blen >= 63) {
        return (size_t) -1;
    }

    for (j = 0; j <= blen; j++) {
        d[j] = j;
    }

    for (i = 1; i <= alen; i++) {
        prev = d[0];
        d[0] = i;
        for (j = 1; j <= blen; j++) {
            up = d[j];
            cur = prev + (a[i - 1] != b[j - 1]);
            if (d[j] + 1 < cur) {
                cur = d[j] + 1;
            }
            if (d[j - 1] + 1 < cur) {
                cur = d[j - 1] + 1;
            }
            d[j] = cur;
            prev = up;
        }
    }

    return d[blen];
}
