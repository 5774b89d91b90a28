/*
 * Tool definitions from the policy: every route granted to a client
 * becomes a tool a model can call, with a JSON schema for its arguments
 * built from the route's own rules (path params and their patterns, the
 * allowed and required query parameters, the JSON body rules).  The
 * agent gives these to the model and airlockctl prints them, so what the
 * model is offered is exactly what the proxy allows.
 *
 * A tool call's arguments are one object:
 *
 *   { "params": { path params }, "query": { query params },
 *     "body": JSON body }
 *
 * each present only when the route has that part.  The sandbox tool
 * run_python takes inputs of the same shape plus "name" and "route".
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "airlock.h"


static json_t *al_tools_route(const al_route_t *r, al_tools_format_t fmt);
static json_t *al_tools_run_python(const al_policy_t *p,
    const al_client_t *sandbox, al_tools_format_t fmt);
static json_t *al_tools_wrap(const char *name, const char *desc,
    json_t *schema, al_tools_format_t fmt);
static json_t *al_tools_params(const al_param_t *params, size_t n,
    const uint8_t *required, const char *desc, size_t *nrequired);
static json_t *al_tools_json_rule(const al_json_rule_t *rule);
static json_t *al_tools_strn(const al_str_t *s);
static int al_tools_set(json_t *obj, const char *key, json_t *v);


unsigned
al_tool_method(const al_route_t *r)
{
    unsigned  bit;

    if (r->has_body && (r->methods & AL_METHOD_POST)) {
        return AL_METHOD_POST;
    }

    if (r->methods & AL_METHOD_GET) {
        return AL_METHOD_GET;
    }

    for (bit = 1; bit <= AL_METHOD_OPTIONS; bit <<= 1) {
        if (r->methods & bit) {
            return bit;
        }
    }

    return 0;
}


/*
 * The route's body content_type, which the proxy holds a request to
 * (al_match.c), or application/json when it has none (any is taken
 * then).  A tool call (the agent's) and a run_python input (the
 * worker's fetch) both send this: each sent application/json, which a
 * route with another content_type refuses, every call.  One that is no
 * header value (a control byte) is not sent: the proxy refuses the
 * request then, as before, and so is one over AL_TOOL_CTYPE_MAX bytes.
 */

const char *
al_tool_content_type(const al_route_t *r)
{
    size_t  i;

    if (r->content_type.len == 0 || r->content_type.len > AL_TOOL_CTYPE_MAX)
    {
        return "application/json";
    }

    for (i = 0; i < r->content_type.len; i++) {
        if ((unsigned char) r->content_type.data[i] < 0x20
            || (unsigned char) r->content_type.data[i] > 0x7e)
        {
            return "application/json";
        }
    }

    return r->content_type.data;
}


int
al_tool_name_ok(const char *name, size_t len)
{
    size_t  i;
    char    c;

    /* what OpenAI accepts as a function name */
    if (len == 0 || len > 64) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-'))
        {
            return 0;
        }
    }

    return 1;
}


char *
al_tools_json(const al_policy_t *p, const al_client_t *client,
    const al_client_t *sandbox, al_tools_format_t fmt, al_error_t *err)
{
    char          *text;
    size_t         i;
    json_t        *list, *tool, *root;
    const al_route_t  *r;

    list = json_array();
    if (list == NULL) {
        goto nomem;
    }

    for (i = 0; i < p->nroutes; i++) {
        r = &p->routes[i];

        if (!r->client_ok[client->index]) {
            continue;
        }

        if (!al_tool_name_ok(r->name.data, r->name.len)
            || strcmp(r->name.data, AL_TOOL_RUN_PYTHON) == 0)
        {
            al_error_set(err, p->file.data, r->line, 0, "route \"%s\" "
                         "cannot be a tool: a tool name is 1 to 64 of "
                         "A-Z a-z 0-9 _ - and not \"%s\"", r->name.data,
                         AL_TOOL_RUN_PYTHON);
            json_decref(list);
            return NULL;
        }

        tool = al_tools_route(r, fmt);
        if (tool == NULL || json_array_append_new(list, tool) != 0) {
            json_decref(list);
            goto nomem;
        }
    }

    if (sandbox != NULL) {
        tool = al_tools_run_python(p, sandbox, fmt);
        if (tool == NULL || json_array_append_new(list, tool) != 0) {
            json_decref(list);
            goto nomem;
        }
    }

    if (fmt == AL_TOOLS_MCP) {
        root = json_pack("{s:o}", "tools", list);
    } else {
        root = list;
    }

    if (root == NULL) {
        goto nomem;
    }

    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);

    if (text == NULL) {
        goto nomem;
    }

    return text;

nomem:

    al_error_set(err, p->file.data, 0, 0, "out of memory building the "
                 "tool definitions");
    return NULL;
}


static json_t *
al_tools_route(const al_route_t *r, al_tools_format_t fmt)
{
    char         desc[1024];
    size_t       n;
    json_t      *schema, *props, *required, *part;
    const char  *method;

    method = al_method_name(al_tool_method(r));

    if (r->description.len) {
        snprintf(desc, sizeof(desc), "%s (%s %s, policy route %s)",
                 r->description.data, method, r->path.data, r->name.data);
    } else {
        snprintf(desc, sizeof(desc), "%s %s (policy route %s)",
                 method, r->path.data, r->name.data);
    }

    schema = json_object();
    props = json_object();
    required = json_array();

    if (schema == NULL || props == NULL || required == NULL) {
        goto failed;
    }

    if (r->nparams) {
        part = al_tools_params(r->params, r->nparams, NULL,
                               "path parameters", &n);

        if (al_tools_set(props, "params", part) != 0
            || (n && json_array_append_new(required, json_string("params"))
                     != 0))
        {
            goto failed;
        }
    }

    if (r->nquery_allow) {
        part = al_tools_params(r->query_patterns, r->nquery_allow,
                               r->query_required, "query parameters", &n);

        if (al_tools_set(props, "query", part) != 0
            || (n && json_array_append_new(required, json_string("query"))
                     != 0))
        {
            goto failed;
        }
    }

    if (r->has_body) {
        part = (r->json != NULL) ? al_tools_json_rule(r->json)
                                 : json_pack("{s:s}", "type", "string");

        if (al_tools_set(props, "body", part) != 0
            || json_array_append_new(required, json_string("body")) != 0)
        {
            goto failed;
        }
    }

    if (al_tools_set(schema, "type", json_string("object")) != 0
        || al_tools_set(schema, "properties", props) != 0
        || al_tools_set(schema, "required", required) != 0
        || al_tools_set(schema, "additionalProperties", json_false()) != 0)
    {
        json_decref(schema);
        return NULL;
    }

    return al_tools_wrap(r->name.data, desc, schema, fmt);

failed:

    json_decref(schema);
    json_decref(props);
    json_decref(required);

    return NULL;
}


/*
 * The schema of a route's path or query parameters: an object of strings,
 * each with its pattern when it has one.  required[i] says which must be
 * there (NULL: all of them); *nrequired is how many.  NULL: out of memory.
 */

static json_t *
al_tools_params(const al_param_t *params, size_t n, const uint8_t *required,
    const char *desc, size_t *nrequired)
{
    size_t   i;
    json_t  *part, *props, *req, *v;

    *nrequired = 0;

    part = json_object();
    props = json_object();
    req = json_array();

    if (part == NULL || props == NULL || req == NULL
        || al_tools_set(part, "type", json_string("object")) != 0
        || al_tools_set(part, "description", json_string(desc)) != 0)
    {
        goto failed;
    }

    for (i = 0; i < n; i++) {
        v = json_pack("{s:s}", "type", "string");

        if (v != NULL && params[i].re != NULL
            && al_tools_set(v, "pattern", al_tools_strn(&params[i].pattern))
               != 0)
        {
            json_decref(v);
            goto failed;
        }

        if (v == NULL
            || json_object_set_new(props, params[i].name.data, v) != 0)
        {
            goto failed;
        }

        if ((required == NULL || required[i])
            && json_array_append_new(req, al_tools_strn(&params[i].name))
               != 0)
        {
            goto failed;
        }
    }

    *nrequired = json_array_size(req);

    if (json_object_set(part, "properties", props) != 0
        || (*nrequired && json_object_set(part, "required", req) != 0)
        || al_tools_set(part, "additionalProperties", json_false()) != 0)
    {
        goto failed;
    }

    json_decref(props);
    json_decref(req);

    return part;

failed:

    json_decref(part);
    json_decref(props);
    json_decref(req);

    return NULL;
}


static json_t *
al_tools_run_python(const al_policy_t *p, const al_client_t *sandbox,
    al_tools_format_t fmt)
{
    size_t   i;
    json_t  *routes, *input, *schema;

    routes = json_array();
    if (routes == NULL) {
        return NULL;
    }

    for (i = 0; i < p->nroutes; i++) {
        if (p->routes[i].client_ok[sandbox->index]) {
            json_array_append_new(routes,
                                  al_tools_strn(&p->routes[i].name));
        }
    }

    input = json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:o}, s:{s:s}, "
                      "s:{s:s}, s:{}}, s:[s, s], s:b}",
                      "type", "object",
                      "properties",
                        "name", "type", "string",
                                "pattern", "^[A-Za-z0-9_-]{1,64}$",
                        "route", "type", "string", "enum", routes,
                        "params", "type", "object",
                        "query", "type", "object",
                        "body",
                      "required", "name", "route",
                      "additionalProperties", 0);
    if (input == NULL) {
        return NULL;
    }

    schema = json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:o}}, "
                       "s:[s], s:b}",
                       "type", "object",
                       "properties",
                         "script", "type", "string",
                           "description", "Python 3 source",
                         "inputs", "type", "array",
                           "maxItems", AL_TOOL_INPUTS_MAX,
                           "items", input,
                       "required", "script",
                       "additionalProperties", 0);
    if (schema == NULL) {
        return NULL;
    }

    return al_tools_wrap(AL_TOOL_RUN_PYTHON,
        "Runs a Python 3 script in a throw-away sandbox with no network. "
        "Each input is fetched first through the named route it names "
        "(params, query and body as for that route's tool) and the "
        "script reads them from /app/data/data.json as "
        "{\"<name>\": {\"status\": <HTTP status>, \"body\": <JSON or "
        "text>}}.  Returns the exit status, stdout and stderr.",
        schema, fmt);
}


static json_t *
al_tools_wrap(const char *name, const char *desc, json_t *schema,
    al_tools_format_t fmt)
{
    if (fmt == AL_TOOLS_MCP) {
        return json_pack("{s:s, s:s, s:o}", "name", name,
                         "description", desc, "inputSchema", schema);
    }

    return json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function",
                     "function", "name", name, "description", desc,
                     "parameters", schema);
}


static json_t *
al_tools_json_rule(const al_json_rule_t *rule)
{
    size_t       i;
    json_t      *s, *props, *req, *m;
    const char  *type;

    switch (rule->type) {
    case AL_JSON_STRING:  type = "string";  break;
    case AL_JSON_INTEGER: type = "integer"; break;
    case AL_JSON_NUMBER:  type = "number";  break;
    case AL_JSON_BOOLEAN: type = "boolean"; break;
    case AL_JSON_OBJECT:  type = "object";  break;
    case AL_JSON_ARRAY:   type = "array";   break;
    case AL_JSON_NULL:    type = "null";    break;
    default:              type = NULL;      break;
    }

    s = json_object();
    if (s == NULL) {
        return NULL;
    }

    if (type != NULL && al_tools_set(s, "type", json_string(type)) != 0) {
        json_decref(s);
        return NULL;
    }

    if (rule->re != NULL
        && al_tools_set(s, "pattern", al_tools_strn(&rule->pattern)) != 0)
    {
        json_decref(s);
        return NULL;
    }

    if (rule->type != AL_JSON_OBJECT || rule->nmembers == 0) {
        return s;
    }

    props = json_object();
    req = json_array();

    if (props == NULL || req == NULL) {
        json_decref(props);
        json_decref(req);
        json_decref(s);
        return NULL;
    }

    for (i = 0; i < rule->nmembers; i++) {
        m = al_tools_json_rule(&rule->members[i]);
        if (m == NULL
            || json_object_set_new(props, rule->members[i].name.data, m)
               != 0)
        {
            json_decref(props);
            json_decref(req);
            json_decref(s);
            return NULL;
        }

        if (rule->members[i].required) {
            json_array_append_new(req,
                                  al_tools_strn(&rule->members[i].name));
        }
    }

    al_tools_set(s, "properties", props);

    if (json_array_size(req)) {
        al_tools_set(s, "required", req);
    } else {
        json_decref(req);
    }

    al_tools_set(s, "additionalProperties",
                 rule->additional ? json_true() : json_false());

    return s;
}


static json_t *
al_tools_strn(const al_str_t *s)
{
    return json_stringn(s->data, s->len);
}


/* json_object_set_new that also fails on a NULL value (out of memory) */
static int
al_tools_set(json_t *obj, const char *key, json_t *v)
{
    if (v == NULL) {
        return -1;
    }

    return json_object_set_new(obj, key, v);
}
