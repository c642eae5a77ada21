/* redis_stream/dlq_classify.c: `dead_letter_classify` of a redis_stream entry (see the header for
 * why).
 *
 * Redis gives the ids (the XRANGE reply, read in the redis_stream pipeline), PostgreSQL says which
 * were done: one statement per dead-letter stream and scrape, whatever the number of entries,
 * with the ids as one array parameter so nothing from Redis is ever spliced into SQL. The
 * identifiers from the config are quoted when the statement is built, as the postgres sections
 * do. Ids are put in the column's canonical text form first, so that the ids the server returns
 * (column::text) are found again whatever way the producer spelt them ("007", an uppercase
 * uuid). */
#include "dlq_classify.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redis.h"
#include "util.h"

#include "common/pg.h"

/* Ids longer than this are not ids anyone indexes: counted as unknown, kept out of the query. */
#define DLQ_ID_MAX_BYTES 1024

/* ---- ids (pure) ---- */

enum dlq_id_kind dlq_id_kind_of(const char *typname)
{
    if (strcmp(typname, "int2") == 0 || strcmp(typname, "int4") == 0 ||
        strcmp(typname, "int8") == 0)
        return DLQ_ID_INT;
    if (strcmp(typname, "uuid") == 0)
        return DLQ_ID_UUID;
    if (strcmp(typname, "text") == 0 || strcmp(typname, "varchar") == 0 ||
        strcmp(typname, "name") == 0)
        return DLQ_ID_TEXT;
    if (strcmp(typname, "bpchar") == 0)
        return DLQ_ID_BPCHAR;
    return DLQ_ID_OTHER;
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) without NUL bytes:
 * what a UTF8 database accepts as text. */
static int valid_utf8(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        size_t n;
        unsigned min;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            n = 1;
            min = 0x80;
            c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            min = 0x800;
            c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            min = 0x10000;
            c &= 0x07;
        } else {
            return 0;
        }
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            c = (c << 6) | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        i += n + 1;
    }
    return 1;
}

static long put_out(char *out, size_t cap, const char *s, size_t len)
{
    if (len + 1 > cap)
        return -1;
    memcpy(out, s, len);
    out[len] = '\0';
    return (long)len;
}

/* The server's int input: spaces around, an optional sign, decimal digits. */
static long canonical_int(const char *typname, const char *id, size_t len, char *out, size_t cap)
{
    size_t i = 0, end = len;
    while (i < end && (id[i] == ' ' || id[i] == '\t' || id[i] == '\n' || id[i] == '\r'))
        i++;
    while (end > i && (id[end - 1] == ' ' || id[end - 1] == '\t' || id[end - 1] == '\n' ||
                       id[end - 1] == '\r'))
        end--;
    int neg = 0;
    if (i < end && (id[i] == '+' || id[i] == '-'))
        neg = id[i++] == '-';
    if (i == end)
        return -1;
    uint64_t limit = strcmp(typname, "int2") == 0   ? 32767
                     : strcmp(typname, "int4") == 0 ? 2147483647
                                                    : INT64_MAX;
    uint64_t v = 0;
    for (; i < end; i++) {
        if (id[i] < '0' || id[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(id[i] - '0');
        if (v > (limit + (uint64_t)neg - d) / 10)
            return -1; /* beyond the type's range: no row can have it */
        v = v * 10 + d;
    }
    if (v == 0)
        neg = 0;
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%s%llu", neg ? "-" : "", (unsigned long long)v);
    return put_out(out, cap, tmp, (size_t)n);
}

static int hex_val(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The server's uuid input: 32 hex digits, optionally in braces, a '-' allowed after any group of
 * four digits. */
static long canonical_uuid(const char *id, size_t len, char *out, size_t cap)
{
    size_t i = 0, end = len;
    if (len >= 2 && id[0] == '{' && id[len - 1] == '}') {
        i = 1;
        end = len - 1;
    }
    char hex[32];
    size_t n = 0;
    for (; i < end; i++) {
        if (id[i] == '-') {
            if (n == 0 || n % 4 || n == 32 || id[i - 1] == '-')
                return -1;
            continue;
        }
        if (hex_val(id[i]) < 0 || n == 32)
            return -1;
        hex[n++] = id[i];
    }
    if (n != 32 || id[end - 1] == '-')
        return -1;
    char tmp[37];
    size_t o = 0;
    for (size_t k = 0; k < 32; k++) {
        if (k == 8 || k == 12 || k == 16 || k == 20)
            tmp[o++] = '-';
        tmp[o++] = "0123456789abcdef"[hex_val(hex[k])];
    }
    return put_out(out, cap, tmp, o);
}

long dlq_id_canonical(enum dlq_id_kind kind, const char *typname, const char *id, size_t len,
                      char *out, size_t cap)
{
    if (len == 0 || len > DLQ_ID_MAX_BYTES || !valid_utf8((const unsigned char *)id, len))
        return -1;
    switch (kind) {
    case DLQ_ID_INT:
        return canonical_int(typname ? typname : "int8", id, len, out, cap);
    case DLQ_ID_UUID:
        return canonical_uuid(id, len, out, cap);
    case DLQ_ID_BPCHAR:
        while (len > 0 && id[len - 1] == ' ')
            len--;
        return put_out(out, cap, id, len);
    case DLQ_ID_TEXT:
    case DLQ_ID_OTHER:
        break;
    }
    return put_out(out, cap, id, len);
}

char *dlq_text_array(const char *const *v, size_t n)
{
    struct buf b;
    buf_init(&b);
    buf_putc(&b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ',');
        buf_putc(&b, '"');
        for (const char *s = v[i]; *s; s++) {
            if (*s == '"' || *s == '\\')
                buf_putc(&b, '\\');
            buf_putc(&b, *s);
        }
        buf_putc(&b, '"');
    }
    buf_putc(&b, '}');
    return buf_steal(&b);
}

/* ---- the entries of a dead-letter stream (pure) ---- */

void dlq_tally_free(struct dlq_tally *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nids; i++)
        free(t->ids[i]);
    free(t->ids);
    memset(t, 0, sizeof *t);
}

static int is_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

int dlq_tally_add(struct dlq_tally *t, const char *id_field, const redisReply *r, struct err *e)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want an array of entries, got %s",
                       redis_reply_type_name(r));
    size_t flen = strlen(id_field);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 2 || !is_str(x->element[0]))
            return err_set(e, ERR_PROTOCOL, "entry %zu: want [id, fields], got %s", i + 1,
                           !x || x->type != REDIS_REPLY_ARRAY ? redis_reply_type_name(x)
                           : x->elements != 2                 ? "another number of elements"
                                                              : "an id that is not a string");
        t->read++;
        const redisReply *f = x->element[1];
        const redisReply *v = NULL;
        if (f && f->type == REDIS_REPLY_ARRAY)
            for (size_t j = 0; j + 1 < f->elements && !v; j += 2)
                if (is_str(f->element[j]) && f->element[j]->len == flen &&
                    memcmp(f->element[j]->str, id_field, flen) == 0)
                    v = f->element[j + 1];
        /* An id with a NUL byte could not be passed on as text: it is not an id of this table. */
        if (!is_str(v) || v->len == 0 || memchr(v->str, '\0', v->len)) {
            t->without_id++;
            continue;
        }
        if (t->nids == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 64;
            t->ids = xrealloc(t->ids, t->cap * sizeof *t->ids);
        }
        t->ids[t->nids++] = xstrndup(v->str, v->len);
    }
    return 0;
}

struct dlq_classify {
    char *table; /* as in the config: "t" or "schema.t" */
    char *id_column;
    char *done_column; /* NULL: a row with the id means done */
    char *id_field;
    long long max_entries;
    struct pg_params params;
    /* per connection: */
    struct pg_conn *conn;
    enum dlq_id_kind kind;
    char typname[64];
    char *sql;
};

char *dlq_classify_sql(const char *table, const char *id_column, const char *done_column,
                       enum dlq_id_kind kind)
{
    char *t = pg_table_sql(table);
    if (!t)
        return NULL;
    char *id = pg_quote_ident(id_column);
    char *done = done_column ? pg_quote_ident(done_column) : NULL;
    char *donex = done ? xasprintf("(%s IS NOT NULL)", done) : xstrdup("true");
    /* Compared as the column's own type ($1 becomes an array of it), so its index serves; the
     * kinds qrel cannot check in advance compare the column's text form instead. */
    char *sql = kind == DLQ_ID_OTHER
                    ? xasprintf("SELECT %s::text, %s FROM %s WHERE %s::text = ANY($1::text[])", id,
                                donex, t, id)
                    : xasprintf("SELECT %s::text, %s FROM %s WHERE %s = ANY($1)", id, donex, t, id);
    free(t);
    free(id);
    free(done);
    free(donex);
    return sql;
}

/* ---- the distinct ids of one run ---- */

struct id_slot {
    char *id; /* canonical; NULL: empty slot */
    size_t count;
    int found;
    int done;
};

struct id_map {
    struct id_slot *slots;
    size_t nslots, n;
    const char **keys; /* in insertion order, for the array parameter */
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct id_slot *map_find(struct id_map *m, const char *id)
{
    size_t mask = m->nslots - 1;
    for (size_t i = (size_t)fnv1a(id) & mask;; i = (i + 1) & mask)
        if (!m->slots[i].id || strcmp(m->slots[i].id, id) == 0)
            return &m->slots[i];
}

/* Sized once for at most n distinct ids: never more than half full. */
static void map_init(struct id_map *m, size_t n)
{
    m->nslots = 16;
    while (m->nslots < 2 * n + 2)
        m->nslots *= 2;
    m->slots = xcalloc(m->nslots, sizeof *m->slots);
    m->keys = xcalloc(n ? n : 1, sizeof *m->keys);
    m->n = 0;
}

static void map_free(struct id_map *m)
{
    for (size_t i = 0; i < m->nslots; i++)
        free(m->slots[i].id);
    free(m->slots);
    free(m->keys);
}

/* ---- configuration ---- */

static const char *const block_keys[] = {
    "table",    "id_column",     "done_column",  "id_field", "max_entries",
    "dsn_file", "dsn_env",       "host",         "port",     "user",
    "dbname",   "password_file", "password_env", "sslmode",  NULL,
};

void dlq_classify_free(struct dlq_classify *c)
{
    if (!c)
        return;
    pg_close(c->conn);
    pg_params_free(&c->params);
    free(c->table);
    free(c->id_column);
    free(c->done_column);
    free(c->id_field);
    free(c->sql);
    free(c);
}

long long dlq_classify_max_entries(const struct dlq_classify *c)
{
    return c->max_entries;
}

const char *dlq_classify_id_field(const struct dlq_classify *c)
{
    return c->id_field;
}

struct dlq_classify *dlq_classify_configure(struct cfg_node *block, const char *where,
                                            struct err *e)
{
    struct dlq_classify *c = xcalloc(1, sizeof *c);
    if (cfg_get_nonempty(block, "table", &c->table, e) ||
        cfg_get_nonempty(block, "id_column", &c->id_column, e) ||
        cfg_get_nonempty(block, "done_column", &c->done_column, e) ||
        cfg_get_nonempty(block, "id_field", &c->id_field, e) ||
        cfg_get_int(block, "max_entries", DLQ_CLASSIFY_DEFAULT_MAX_ENTRIES, 1, 1000000,
                    &c->max_entries, e))
        goto fail;
    const char *missing = !c->table       ? "table"
                          : !c->id_column ? "id_column"
                          : !c->id_field  ? "id_field"
                                          : NULL;
    struct cfg_node *n = NULL;
    int has_db = 0;
    for (const char *const *k = (const char *const[]){"dsn_file", "dsn_env", "host", NULL}; *k;
         k++) {
        if (cfg_get_node(block, *k, CFG_NULL, &n, e))
            goto fail;
        has_db |= n != NULL;
    }
    if (missing || !has_db) {
        /* A misspelt key is the likelier story: its message names the typo and the known keys. */
        if (cfg_finish_keys(block, block_keys, where, e) == 0) {
            if (missing)
                cfg_error(e, block, "dead_letter_classify: %s is required", missing);
            else
                cfg_error(e, block,
                          "dead_letter_classify: want dsn_file, dsn_env or host (the database "
                          "holding table \"%s\")",
                          c->table);
        }
        goto fail;
    }
    char *qt = pg_table_sql(c->table);
    if (!qt) {
        cfg_error(e, cfg_at(block, "table"),
                  "table: want \"table\" or \"schema.table\", got \"%s\"", c->table);
        goto fail;
    }
    free(qt);
    if (c->done_column && strcmp(c->done_column, c->id_column) == 0) {
        cfg_error(e, cfg_at(block, "done_column"),
                  "done_column: want a column other than id_column (\"%s\")", c->id_column);
        goto fail;
    }
    if (pg_params_configure(&c->params, block, where, e) || cfg_finish(block, where, e))
        goto fail;
    return c;
fail:
    dlq_classify_free(c);
    return NULL;
}

/* ---- PostgreSQL ---- */

static int fail(struct dlq_classify *c, struct err *e)
{
    pg_close(c->conn);
    c->conn = NULL;
    return err_prefix(e, "dead_letter_classify");
}

/* On a fresh connection: the table and columns exist and may be read, and how ids compare. */
static int learn_column(struct dlq_classify *c, const char *what, const struct deadline *dl,
                        struct err *e)
{
    struct pg_column cols[2] = {{c->id_column, PG_COL_ANY}, {c->done_column, PG_COL_ANY}};
    if (pg_check_columns(c->conn, dl, what, c->table, cols, c->done_column ? 2 : 1, e))
        return -1;
    static const char sql[] =
        "SELECT t.typname FROM pg_catalog.pg_attribute a "
        "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND a.attnum > 0 "
        "AND NOT a.attisdropped";
    char *qt = pg_table_sql(c->table);
    const char *params[2] = {qt, c->id_column};
    PGresult *r = NULL;
    int rc = pg_query(c->conn, dl, what, sql, 2, params, &r, e);
    free(qt);
    if (rc)
        return -1;
    if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0)) {
        PQclear(r);
        return pg_error(c->conn, e, ERR_PROTOCOL, "%s: column \"%s\": no type in the catalogue",
                        what, c->id_column);
    }
    snprintf(c->typname, sizeof c->typname, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    c->kind = dlq_id_kind_of(c->typname);
    free(c->sql);
    c->sql = dlq_classify_sql(c->table, c->id_column, c->done_column, c->kind);
    return 0;
}

static int ensure_conn(struct dlq_classify *c, const char *source, const char *what,
                       const struct deadline *dl, struct err *e)
{
    if (c->conn)
        return 0;
    c->conn = pg_connect(&c->params, source, dl, e);
    if (!c->conn || learn_column(c, what, dl, e))
        return -1;
    return 0;
}

int dlq_classify_check(struct dlq_classify *c, const char *source, const char *what,
                       const struct deadline *dl, struct err *e)
{
    int rc = ensure_conn(c, source, what, dl, e) ? fail(c, e) : 0;
    pg_close(c->conn);
    c->conn = NULL;
    return rc;
}

int dlq_classify_run(struct dlq_classify *c, const char *source, const char *dlq,
                     const struct dlq_tally *t, long long xlen, const struct deadline *dl,
                     struct dlq_split *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    char what[400];
    snprintf(what, sizeof what, "dead-letter stream \"%.300s\"", dlq);
    if (ensure_conn(c, source, what, dl, e))
        return fail(c, e);

    struct id_map m;
    map_init(&m, t->nids);
    size_t invalid = 0;
    char canon[DLQ_ID_MAX_BYTES + 1];
    for (size_t i = 0; i < t->nids; i++) {
        if (dlq_id_canonical(c->kind, c->typname, t->ids[i], strlen(t->ids[i]), canon,
                             sizeof canon) < 0) {
            invalid++;
            continue;
        }
        struct id_slot *s = map_find(&m, canon);
        if (!s->id) {
            s->id = xstrdup(canon);
            m.keys[m.n++] = s->id;
        }
        s->count++;
    }
    /* Always asked, with no id too: a database that went away shows now, not at the incident. */
    char *array = dlq_text_array(m.keys, m.n);
    const char *params[1] = {array};
    PGresult *r = NULL;
    int rc = pg_query(c->conn, dl, what, c->sql, 1, params, &r, e);
    free(array);
    if (rc == 0 && PQnfields(r) != 2) {
        pg_error(c->conn, e, ERR_PROTOCOL, "%s: want 2 columns, got %d", what, PQnfields(r));
        rc = -1;
    }
    if (rc == 0)
        for (int row = 0; row < PQntuples(r); row++) {
            if (PQgetisnull(r, row, 0))
                continue;
            struct id_slot *s = map_find(&m, PQgetvalue(r, row, 0));
            if (!s->id)
                continue; /* a text form we did not send: cannot be matched to an entry */
            s->found = 1;
            if (!PQgetisnull(r, row, 1) && strcmp(PQgetvalue(r, row, 1), "t") == 0)
                s->done = 1; /* several rows per id: done when any of them is */
        }
    PQclear(r);
    if (rc == 0) {
        for (size_t i = 0; i < m.nslots; i++) {
            const struct id_slot *s = &m.slots[i];
            if (!s->id)
                continue;
            if (s->found && s->done)
                out->done += (double)s->count;
            else
                out->not_done += (double)s->count;
        }
        size_t beyond = xlen > 0 && (unsigned long long)xlen > t->read ? (size_t)xlen - t->read : 0;
        out->unknown = (double)(t->without_id + invalid + beyond);
    }
    map_free(&m);
    return rc ? fail(c, e) : 0;
}
