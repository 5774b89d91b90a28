/*
 * YAML to a node tree, with the places of every node kept for error
 * messages.  Only the plain subset a policy needs is accepted: one
 * document, no anchors or aliases (no billion laughs, no shared nodes),
 * no tags, no duplicate mapping keys, no non-scalar keys.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "al_internal.h"


#define AL_YAML_DEPTH_MAX   64

/* mappings with more keys are checked for duplicates by sorting them when
   they end, so a large mapping costs n log n, not n * n */
#define AL_YAML_KEYS_LINEAR 16


typedef struct {
    al_pool_t     *pool;
    const char    *name;
    al_error_t    *err;
    al_ynode_t    *stack[AL_YAML_DEPTH_MAX];
    al_ynode_t   **items[AL_YAML_DEPTH_MAX];    /* children so far, in
                                                   scratch memory */
    size_t         cap[AL_YAML_DEPTH_MAX];
    size_t         cnt[AL_YAML_DEPTH_MAX];
    size_t         depth;
    al_ynode_t    *root;
} al_yaml_ctx_t;


static int al_yaml_add(al_yaml_ctx_t *ctx, al_ynode_t *node);
static int al_yaml_end(al_yaml_ctx_t *ctx);
static int al_yaml_key_cmp(const void *a, const void *b);
static al_ynode_t *al_yaml_node(al_yaml_ctx_t *ctx, al_ynode_type_t type,
    const yaml_mark_t *mark);
static int al_yaml_event(al_yaml_ctx_t *ctx, yaml_event_t *ev);


const char *
al_ynode_type_name(const al_ynode_t *node)
{
    switch (node->type) {
    case AL_Y_SEQ:
        return "a list";
    case AL_Y_MAP:
        return "a mapping";
    default:
        return "a scalar";
    }
}


al_ynode_t *
al_yaml_parse(al_pool_t *pool, const char *name, const char *buf,
    size_t len, al_error_t *err)
{
    int             done, rc;
    size_t          i;
    unsigned        line, column;
    yaml_event_t    ev;
    al_yaml_ctx_t   ctx;
    yaml_parser_t   parser;

    memset(&ctx, 0, sizeof(ctx));
    ctx.pool = pool;
    ctx.name = name;
    ctx.err = err;

    if (!yaml_parser_initialize(&parser)) {
        al_error_set(err, name, 0, 0, "out of memory");
        return NULL;
    }

    /*
     * A byte order mark may begin a YAML stream (editors on Windows write
     * one).  Told the encoding, libyaml reads it as a character of the
     * first line, whose keys then stand one column to the right of the
     * next line's: it is left out here, as libyaml leaves it out when it
     * finds the encoding itself.
     */

    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
        buf += 3;
        len -= 3;
    }

    yaml_parser_set_input_string(&parser, (const unsigned char *) buf, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);

    done = 0;
    rc = 0;

    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {

            /* the reader's errors (a byte that is not UTF-8 or not
               printable) have an offset, not a mark */

            if (parser.error == YAML_READER_ERROR) {
                al_yaml_place(buf, parser.problem_offset < len
                                   ? parser.problem_offset : len,
                              &line, &column);

            } else {
                line = parser.problem_mark.line + 1;
                column = parser.problem_mark.column + 1;
            }

            al_error_set(err, name, line, column, "invalid YAML: %s%s%s",
                         parser.problem ? parser.problem : "syntax error",
                         parser.context ? " " : "",
                         parser.context ? parser.context : "");
            rc = -1;
            break;
        }

        done = (ev.type == YAML_STREAM_END_EVENT);
        rc = al_yaml_event(&ctx, &ev);
        yaml_event_delete(&ev);

        if (rc != 0) {
            break;
        }
    }

    yaml_parser_delete(&parser);

    for (i = 0; i < AL_YAML_DEPTH_MAX; i++) {
        free(ctx.items[i]);
    }

    if (rc != 0) {
        return NULL;
    }

    if (ctx.root == NULL) {
        al_error_set(err, name, 1, 1, "the policy file is empty");
        return NULL;
    }

    return ctx.root;
}


static int
al_yaml_event(al_yaml_ctx_t *ctx, yaml_event_t *ev)
{
    const char     *anchor;
    const char     *tag;
    al_ynode_t     *node;
    yaml_mark_t    *m;

    m = &ev->start_mark;
    anchor = NULL;
    tag = NULL;

    switch (ev->type) {

    case YAML_DOCUMENT_START_EVENT:
        if (ctx->root != NULL) {
            al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                         "only one YAML document is allowed in a policy");
            return -1;
        }
        return 0;

    case YAML_ALIAS_EVENT:
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "YAML aliases (*name) are not supported in a policy");
        return -1;

    case YAML_SCALAR_EVENT:
        anchor = (const char *) ev->data.scalar.anchor;
        tag = (const char *) ev->data.scalar.tag;
        break;

    case YAML_SEQUENCE_START_EVENT:
        anchor = (const char *) ev->data.sequence_start.anchor;
        tag = (const char *) ev->data.sequence_start.tag;
        break;

    case YAML_MAPPING_START_EVENT:
        anchor = (const char *) ev->data.mapping_start.anchor;
        tag = (const char *) ev->data.mapping_start.tag;
        break;

    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return al_yaml_end(ctx);

    default:
        return 0;
    }

    if (anchor != NULL) {
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "YAML anchors (&%s) are not supported in a policy",
                     anchor);
        return -1;
    }

    if (tag != NULL
        && !(ev->type == YAML_SCALAR_EVENT && strcmp(tag, "!") == 0))
    {
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "YAML tags (%s) are not supported in a policy", tag);
        return -1;
    }

    if (ev->type == YAML_SCALAR_EVENT) {

        /*
         * The file may hold no NUL byte, but an escape ("\0", "\x00",
         * "\u0000") makes one: the values are C strings to some readers
         * (getpwnam(), the diff's output) and counted bytes to others
         * (a pattern compiled to its full length), which would then read
         * two different values.
         */

        if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length)
            != NULL)
        {
            al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                         "a NUL character (an escape such as \"\\0\") "
                         "is not allowed in a policy value");
            return -1;
        }

        node = al_yaml_node(ctx, AL_Y_SCALAR, m);
        if (node == NULL) {
            return -1;
        }

        node->scalar.data = al_pstrndup(ctx->pool,
                                        (const char *) ev->data.scalar.value,
                                        ev->data.scalar.length);
        if (node->scalar.data == NULL) {
            al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
            return -1;
        }
        node->scalar.len = ev->data.scalar.length;
        node->plain = (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE);

        return al_yaml_add(ctx, node);
    }

    node = al_yaml_node(ctx, ev->type == YAML_SEQUENCE_START_EVENT
                             ? AL_Y_SEQ : AL_Y_MAP, m);
    if (node == NULL || al_yaml_add(ctx, node) != 0) {
        return -1;
    }

    if (ctx->depth == AL_YAML_DEPTH_MAX) {
        al_error_set(ctx->err, ctx->name, m->line + 1, m->column + 1,
                     "nesting deeper than %d levels", AL_YAML_DEPTH_MAX);
        return -1;
    }

    ctx->stack[ctx->depth] = node;
    ctx->cnt[ctx->depth] = 0;
    ctx->depth++;

    return 0;
}


static al_ynode_t *
al_yaml_node(al_yaml_ctx_t *ctx, al_ynode_type_t type,
    const yaml_mark_t *mark)
{
    al_ynode_t  *node;

    node = al_palloc(ctx->pool, sizeof(al_ynode_t));
    if (node == NULL) {
        al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
        return NULL;
    }

    node->type = type;
    node->line = mark->line + 1;
    node->column = mark->column + 1;

    return node;
}


static int
al_yaml_add(al_yaml_ctx_t *ctx, al_ynode_t *node)
{
    size_t        i, d, count, ncap;
    al_ynode_t   *parent, *key, **items;

    if (ctx->depth == 0) {
        ctx->root = node;
        return 0;
    }

    d = ctx->depth - 1;
    parent = ctx->stack[d];
    count = ctx->cnt[d];

    if (parent->type == AL_Y_MAP && count % 2 == 0) {
        /* node is a key */
        if (node->type != AL_Y_SCALAR) {
            al_error_set(ctx->err, ctx->name, node->line, node->column,
                         "mapping keys must be plain names, found %s",
                         al_ynode_type_name(node));
            return -1;
        }

        for (i = 0; i < count / 2 && i < AL_YAML_KEYS_LINEAR; i++) {
            key = ctx->items[d][i * 2];
            if (key->scalar.len == node->scalar.len
                && memcmp(key->scalar.data, node->scalar.data,
                          key->scalar.len) == 0)
            {
                al_error_set(ctx->err, ctx->name, node->line, node->column,
                             "duplicate key \"%s\" (first given at line %u)",
                             node->scalar.data, key->line);
                return -1;
            }
        }
    }

    /* the scratch list of a depth is reused by every container there */
    if (count == ctx->cap[d]) {
        ncap = count ? count * 2 : 16;
        items = realloc(ctx->items[d], ncap * sizeof(al_ynode_t *));
        if (items == NULL) {
            al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
            return -1;
        }
        ctx->items[d] = items;
        ctx->cap[d] = ncap;
    }

    ctx->items[d][count] = node;
    ctx->cnt[d] = count + 1;

    return 0;
}


/* a container ends: its children move to the pool, exactly sized */

static int
al_yaml_end(al_yaml_ctx_t *ctx)
{
    size_t        i, d, count;
    al_ynode_t   *node, **keys;

    d = --ctx->depth;
    node = ctx->stack[d];
    count = ctx->cnt[d];

    node->n = node->type == AL_Y_MAP ? count / 2 : count;

    if (count == 0) {
        return 0;
    }

    node->items = al_palloc(ctx->pool, count * sizeof(al_ynode_t *));
    if (node->items == NULL) {
        al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
        return -1;
    }

    memcpy(node->items, ctx->items[d], count * sizeof(al_ynode_t *));

    if (node->type != AL_Y_MAP || node->n <= AL_YAML_KEYS_LINEAR) {
        return 0;
    }

    keys = malloc(node->n * sizeof(al_ynode_t *));
    if (keys == NULL) {
        al_error_set(ctx->err, ctx->name, 0, 0, "out of memory");
        return -1;
    }

    for (i = 0; i < node->n; i++) {
        keys[i] = node->items[i * 2];
    }

    qsort(keys, node->n, sizeof(al_ynode_t *), al_yaml_key_cmp);

    for (i = 1; i < node->n; i++) {
        if (keys[i]->scalar.len == keys[i - 1]->scalar.len
            && memcmp(keys[i]->scalar.data, keys[i - 1]->scalar.data,
                      keys[i]->scalar.len) == 0)
        {
            al_error_set(ctx->err, ctx->name, keys[i]->line,
                         keys[i]->column,
                         "duplicate key \"%s\" (first given at line %u)",
                         keys[i]->scalar.data, keys[i - 1]->line);
            free(keys);
            return -1;
        }
    }

    free(keys);

    return 0;
}


/*
 * The line and column of byte off of buf, 1-based, as libyaml's marks
 * count them: a column is a character, not a byte.
 */

void
al_yaml_place(const char *buf, size_t off, unsigned *line, unsigned *column)
{
    size_t  i;

    *line = 1;
    *column = 1;

    for (i = 0; i < off; i++) {
        if (buf[i] == '\n') {
            (*line)++;
            *column = 1;

        } else if (((unsigned char) buf[i] & 0xc0) != 0x80) {
            (*column)++;
        }
    }
}


/* keys by content, then in file order */

static int
al_yaml_key_cmp(const void *a, const void *b)
{
    int                n;
    const al_ynode_t  *x, *y;

    x = *(const al_ynode_t *const *) a;
    y = *(const al_ynode_t *const *) b;

    if (x->scalar.len != y->scalar.len) {
        return x->scalar.len < y->scalar.len ? -1 : 1;
    }

    n = memcmp(x->scalar.data, y->scalar.data, x->scalar.len);
    if (n != 0) {
        return n;
    }

    if (x->line != y->line) {
        return x->line < y->line ? -1 : 1;
    }

    return x->column < y->column ? -1 : (x->column > y->column);
}
