/*
 * The route table: a trie over path segments.  Literal edges live in one
 * open-addressing hash table keyed by (parent node, segment), so a lookup
 * costs one probe per segment whether the policy has ten routes or ten
 * thousand.  A node has at most one {param} child.  Each node that ends a
 * route keeps one route per method.
 *
 * Two routes that could match the same request are refused at insert
 * time: a literal segment can always be matched by a {param} (patterns are
 * not compared), so the check walks both kinds of edge.  A {param} in the
 * new route meets every literal sibling at its depth; so that many such
 * routes next to many literal siblings do not cost their product, the
 * table also records, for each node, which literal segments occur two
 * levels below it through a literal child ("grand" edges, their parent id
 * marked with AL_TRIE_GRAND), and whether any literal child has a {param}
 * child.  When neither can continue the new route, no literal sibling
 * can overlap it and they are not visited.
 */

#include <stdlib.h>
#include <string.h>

#include "airlock.h"


#define AL_TRIE_METHODS  7
#define AL_TRIE_BLOCK    256               /* nodes per allocation */
#define AL_TRIE_GRAND    0x80000000u       /* node ids stay below it */


typedef struct al_tnode_s  al_tnode_t;

typedef const al_route_t  *al_tends_t[AL_TRIE_METHODS];

struct al_tnode_s {
    uint32_t             id;
    unsigned             literal:1;         /* a literal child of its
                                               parent */
    unsigned             param_below:1;     /* a literal child has a
                                               {param} child */
    al_tnode_t          *param;
    al_tnode_t          *child;             /* literal children, listed */
    al_tnode_t          *next;
    al_str_t             seg;               /* the edge into this node */
    const al_route_t    *route;             /* the one route ending here */
    al_tends_t          *routes;            /* by method, where two or more
                                               routes end; NULL elsewhere */
};

typedef struct al_tblock_s  al_tblock_t;

/* nodes come in blocks, so a walk touches memory allocated together */
struct al_tblock_s {
    al_tblock_t         *next;
    size_t               used;
    al_tnode_t           node[AL_TRIE_BLOCK];
};

typedef struct al_teblock_s  al_teblock_t;

struct al_teblock_s {
    al_teblock_t        *next;
    size_t               used;
    al_tends_t           ends[AL_TRIE_BLOCK];
};

typedef struct {
    uint32_t             hash;
    uint32_t             parent;
    al_tnode_t          *node;              /* NULL: empty slot */
} al_tedge_t;

struct al_trie_s {
    al_tnode_t          *root;
    al_tedge_t          *edges;
    size_t               nedges;
    size_t               cap;               /* power of two */
    uint32_t             next_id;
    al_tblock_t         *blocks;
    al_teblock_t        *eblocks;
};


static uint32_t al_trie_hash(uint32_t parent, const char *s, size_t len);
static al_tnode_t *al_trie_node(al_trie_t *t, const char *seg, size_t len);
static al_tnode_t *al_trie_edge(const al_trie_t *t, const al_tnode_t *parent,
    const char *s, size_t len);
static al_tnode_t *al_trie_edge_id(const al_trie_t *t, uint32_t parent,
    const char *s, size_t len);
static int al_trie_edge_add(al_trie_t *t, al_tnode_t *parent,
    al_tnode_t *child);
static int al_trie_grow(al_trie_t *t);
static int al_trie_put(al_trie_t *t, uint32_t parent, al_tnode_t *child);
static const al_route_t *al_trie_overlap(const al_trie_t *t,
    const al_tnode_t *node, const al_route_t *route, size_t depth);
static const al_tnode_t *al_trie_walk(const al_trie_t *t,
    const al_tnode_t *node, const al_path_t *path, size_t depth,
    unsigned method, const al_route_t **other);
static unsigned al_trie_method_index(unsigned bit);
static const al_route_t *al_trie_at(const al_tnode_t *node, unsigned m);


al_trie_t *
al_trie_create(void)
{
    al_trie_t  *t;

    t = calloc(1, sizeof(al_trie_t));
    if (t == NULL) {
        return NULL;
    }

    t->cap = 64;
    t->edges = calloc(t->cap, sizeof(al_tedge_t));
    t->root = al_trie_node(t, "", 0);

    if (t->edges == NULL || t->root == NULL) {
        al_trie_free(t);
        return NULL;
    }

    return t;
}


void
al_trie_free(al_trie_t *t)
{
    al_tblock_t   *b, *next;
    al_teblock_t  *e, *enext;

    if (t == NULL) {
        return;
    }

    for (b = t->blocks; b != NULL; b = next) {
        next = b->next;
        free(b);
    }

    for (e = t->eblocks; e != NULL; e = enext) {
        enext = e->next;
        free(e);
    }

    free(t->edges);
    free(t);
}


static uint32_t
al_trie_hash(uint32_t parent, const char *s, size_t len)
{
    size_t    i;
    uint64_t  h;

    /* FNV-1a over the parent id and the segment */
    h = 0xcbf29ce484222325ULL ^ parent;
    h *= 0x100000001b3ULL;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char) s[i];
        h *= 0x100000001b3ULL;
    }

    return (uint32_t) (h ^ (h >> 32));
}


static al_tnode_t *
al_trie_node(al_trie_t *t, const char *seg, size_t len)
{
    al_tnode_t   *n;
    al_tblock_t  *b;

    b = t->blocks;

    if (b == NULL || b->used == AL_TRIE_BLOCK) {
        b = calloc(1, sizeof(al_tblock_t));
        if (b == NULL) {
            return NULL;
        }
        b->next = t->blocks;
        t->blocks = b;
    }

    if (t->next_id >= AL_TRIE_GRAND) {
        return NULL;
    }

    n = &b->node[b->used++];
    n->id = t->next_id++;
    n->seg.data = seg;
    n->seg.len = len;

    return n;
}


static al_tnode_t *
al_trie_edge(const al_trie_t *t, const al_tnode_t *parent, const char *s,
    size_t len)
{
    return al_trie_edge_id(t, parent->id, s, len);
}


static al_tnode_t *
al_trie_edge_id(const al_trie_t *t, uint32_t parent, const char *s,
    size_t len)
{
    size_t             i, mask;
    uint32_t           h;
    const al_tedge_t  *e;

    h = al_trie_hash(parent, s, len);
    mask = t->cap - 1;

    for (i = h & mask; ; i = (i + 1) & mask) {
        e = &t->edges[i];

        if (e->node == NULL) {
            return NULL;
        }

        if (e->hash == h && e->parent == parent
            && e->node->seg.len == len
            && memcmp(e->node->seg.data, s, len) == 0)
        {
            return e->node;
        }
    }
}


static int
al_trie_edge_add(al_trie_t *t, al_tnode_t *parent, al_tnode_t *child)
{
    if (al_trie_put(t, parent->id, child) != 0) {
        return -1;
    }

    child->literal = 1;
    child->next = parent->child;
    parent->child = child;

    return 0;
}


static int
al_trie_put(al_trie_t *t, uint32_t parent, al_tnode_t *child)
{
    size_t       i, mask;
    uint32_t     h;

    if ((t->nedges + 1) * 2 > t->cap && al_trie_grow(t) != 0) {
        return -1;
    }

    h = al_trie_hash(parent, child->seg.data, child->seg.len);
    mask = t->cap - 1;

    for (i = h & mask; t->edges[i].node != NULL; i = (i + 1) & mask) {
        /* void */
    }

    t->edges[i].hash = h;
    t->edges[i].parent = parent;
    t->edges[i].node = child;
    t->nedges++;

    return 0;
}


static int
al_trie_grow(al_trie_t *t)
{
    size_t       i, j, ncap, mask;
    al_tedge_t  *edges;

    ncap = t->cap * 2;
    edges = calloc(ncap, sizeof(al_tedge_t));
    if (edges == NULL) {
        return -1;
    }

    mask = ncap - 1;

    for (i = 0; i < t->cap; i++) {
        if (t->edges[i].node == NULL) {
            continue;
        }
        for (j = t->edges[i].hash & mask; edges[j].node != NULL;
             j = (j + 1) & mask)
        {
            /* void */
        }
        edges[j] = t->edges[i];
    }

    free(t->edges);
    t->edges = edges;
    t->cap = ncap;

    return 0;
}


static unsigned
al_trie_method_index(unsigned bit)
{
    unsigned  i;

    for (i = 0; i < AL_TRIE_METHODS; i++) {
        if (bit == (1u << i)) {
            return i;
        }
    }

    return 0;
}


int
al_trie_insert(al_trie_t *t, const al_route_t *route,
    const al_route_t **conflict)
{
    size_t         i;
    unsigned       m;
    al_tnode_t    *node, *next, *prev;
    al_teblock_t  *eb;

    *conflict = al_trie_overlap(t, t->root, route, 0);
    if (*conflict != NULL) {
        return -1;
    }

    node = t->root;
    prev = NULL;

    for (i = 0; i < route->nsegs; i++) {
        if (route->seg_is_param[i]) {
            if (node->param == NULL) {
                node->param = al_trie_node(t, "", 0);
                if (node->param == NULL) {
                    return -1;
                }
                if (node->literal) {
                    prev->param_below = 1;
                }
            }
            prev = node;
            node = node->param;
            continue;
        }

        next = al_trie_edge(t, node, route->segs[i].data, route->segs[i].len);
        if (next == NULL) {
            next = al_trie_node(t, route->segs[i].data, route->segs[i].len);
            if (next == NULL || al_trie_edge_add(t, node, next) != 0) {
                return -1;
            }

            /* the grand edge, once per segment under prev */
            if (node->literal
                && al_trie_edge_id(t, prev->id | AL_TRIE_GRAND, next->seg.data,
                                   next->seg.len) == NULL
                && al_trie_put(t, prev->id | AL_TRIE_GRAND, next) != 0)
            {
                return -1;
            }
        }
        prev = node;
        node = next;
    }

    /* most paths end one route: a method table only for a second one */
    if (node->route == NULL && node->routes == NULL) {
        node->route = route;
        return 0;
    }

    if (node->routes == NULL) {
        eb = t->eblocks;
        if (eb == NULL || eb->used == AL_TRIE_BLOCK) {
            eb = calloc(1, sizeof(al_teblock_t));
            if (eb == NULL) {
                return -1;
            }
            eb->next = t->eblocks;
            t->eblocks = eb;
        }
        node->routes = &eb->ends[eb->used++];

        for (m = 0; m < AL_TRIE_METHODS; m++) {
            if (node->route->methods & (1u << m)) {
                (*node->routes)[m] = node->route;
            }
        }
        node->route = NULL;
    }

    for (m = 0; m < AL_TRIE_METHODS; m++) {
        if (route->methods & (1u << m)) {
            (*node->routes)[m] = route;
        }
    }

    return 0;
}


/* the route ending at node for method index m, or NULL */

static const al_route_t *
al_trie_at(const al_tnode_t *node, unsigned m)
{
    if (node->routes != NULL) {
        return (*node->routes)[m];
    }

    if (node->route != NULL && (node->route->methods & (1u << m))) {
        return node->route;
    }

    return NULL;
}


/* any route already in the trie that shares a method and a request */

static const al_route_t *
al_trie_overlap(const al_trie_t *t, const al_tnode_t *node,
    const al_route_t *route, size_t depth)
{
    unsigned            m;
    const al_tnode_t   *c;
    const al_route_t   *r;

    if (depth == route->nsegs) {
        for (m = 0; m < AL_TRIE_METHODS; m++) {
            if ((route->methods & (1u << m)) && al_trie_at(node, m) != NULL)
            {
                return al_trie_at(node, m);
            }
        }
        return NULL;
    }

    if (node->param != NULL) {
        r = al_trie_overlap(t, node->param, route, depth + 1);
        if (r != NULL) {
            return r;
        }
    }

    if (!route->seg_is_param[depth]) {
        c = al_trie_edge(t, node, route->segs[depth].data,
                         route->segs[depth].len);
        return c ? al_trie_overlap(t, c, route, depth + 1) : NULL;
    }

    /*
     * A {param} here overlaps every literal sibling, unless none of them
     * can continue with the next segment: a literal one that no literal
     * child has under it, and no literal child has a {param} child.
     */
    if (depth + 1 < route->nsegs && !route->seg_is_param[depth + 1]
        && !node->param_below
        && al_trie_edge_id(t, node->id | AL_TRIE_GRAND,
                           route->segs[depth + 1].data,
                           route->segs[depth + 1].len) == NULL)
    {
        return NULL;
    }

    for (c = node->child; c != NULL; c = c->next) {
        r = al_trie_overlap(t, c, route, depth + 1);
        if (r != NULL) {
            return r;
        }
    }

    return NULL;
}


void
al_trie_lookup(const al_trie_t *t, const al_path_t *path, unsigned method,
    const al_route_t **route, const al_route_t **other)
{
    const al_tnode_t  *node;

    *other = NULL;
    node = al_trie_walk(t, t->root, path, 0, method, other);
    *route = node ? al_trie_at(node, al_trie_method_index(method)) : NULL;
}


static const al_tnode_t *
al_trie_walk(const al_trie_t *t, const al_tnode_t *node,
    const al_path_t *path, size_t depth, unsigned method,
    const al_route_t **other)
{
    unsigned           m;
    const al_tnode_t  *next, *found;

    if (depth == path->nseg) {
        if (node->route == NULL && node->routes == NULL) {
            return NULL;
        }
        if (al_trie_at(node, al_trie_method_index(method)) != NULL
            && method != 0)
        {
            return node;
        }
        for (m = 0; m < AL_TRIE_METHODS && *other == NULL; m++) {
            *other = al_trie_at(node, m);
        }
        return NULL;
    }

    next = al_trie_edge(t, node, path->seg[depth].data, path->seg[depth].len);
    if (next != NULL) {
        found = al_trie_walk(t, next, path, depth + 1, method, other);
        if (found != NULL) {
            return found;
        }
    }

    if (node->param != NULL) {
        return al_trie_walk(t, node->param, path, depth + 1, method, other);
    }

    return NULL;
}
