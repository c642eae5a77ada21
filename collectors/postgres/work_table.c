/* postgres/work_table.c: the work table of a dead-letter join (see the header for why).
 *
 * One statement per join and scrape, whatever the number of dead letters, with the ids as one
 * array parameter so nothing a broker holds is ever spliced into SQL. The identifiers from the
 * config are quoted when the statement is built, as the sections do. Ids are put in the column's
 * canonical text form first, so that the ids the server returns (column::text) are found again
 * whatever way the producer spelt them ("007", an uppercase uuid). */
#include "work_table.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "alloc.h"

/* Ids longer than this are not ids anyone indexes: counted as unknown, kept out of the query. */
#define WT_ID_MAX_BYTES 1024

/* ---- ids (pure) ---- */

enum work_table_id_kind work_table_id_kind_of(const char *typname)
{
    if (strcmp(typname, "int2") == 0 || strcmp(typname, "int4") == 0 ||
        strcmp(typname, "int8") == 0)
        return WT_ID_INT;
    if (strcmp(typname, "uuid") == 0)
        return WT_ID_UUID;
    if (strcmp(typname, "text") == 0 || strcmp(typname, "varchar") == 0 ||
        strcmp(typname, "name") == 0)
        return WT_ID_TEXT;
    if (strcmp(typname, "bpchar") == 0)
        return WT_ID_BPCHAR;
    return WT_ID_OTHER;
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

long work_table_id_canonical(enum work_table_id_kind kind, const char *typname, const char *id,
                             size_t len, char *out, size_t cap)
{
    if (len == 0 || len > WT_ID_MAX_BYTES || !valid_utf8((const unsigned char *)id, len))
        return -1;
    switch (kind) {
    case WT_ID_INT:
        return canonical_int(typname ? typname : "int8", id, len, out, cap);
    case WT_ID_UUID:
        return canonical_uuid(id, len, out, cap);
    case WT_ID_BPCHAR:
        while (len > 0 && id[len - 1] == ' ')
            len--;
        return put_out(out, cap, id, len);
    case WT_ID_TEXT:
    case WT_ID_OTHER:
        break;
    }
    return put_out(out, cap, id, len);
}

char *work_table_sql(const char *table, const char *id_column, const char *done_column,
                     enum work_table_id_kind kind)
{
    char *t = pg_table_sql(table);
    if (!t)
        return NULL;
    char *id = pg_quote_ident(id_column);
    char *done = done_column ? pg_quote_ident(done_column) : NULL;
    char *donex = done ? xasprintf("(%s IS NOT NULL)", done) : xstrdup("true");
    /* Compared as the column's own type ($1 becomes an array of it), so its index serves; the
     * kinds qrel cannot check in advance compare the column's text form instead. */
    char *sql = kind == WT_ID_OTHER
                    ? xasprintf("SELECT %s::text, %s FROM %s WHERE %s::text = ANY($1::text[])", id,
                                donex, t, id)
                    : xasprintf("SELECT %s::text, %s FROM %s WHERE %s = ANY($1)", id, donex, t, id);
    free(t);
    free(id);
    free(done);
    free(donex);
    return sql;
}

/* ---- the distinct ids of one run, indexed by the core's hash helper ---- */

struct id_rec {
    char *id; /* canonical */
    int found;
    int done;
};

struct id_map {
    struct hashtab index;
    struct id_rec *recs; /* room for the run's ids, never more */
    size_t n;
    const char **keys; /* recs[i].id in insertion order, for the array parameter */
};

static uint64_t id_hash(const void *ctx, uint32_t k)
{
    const struct id_map *m = ctx;
    return hashtab_hash(m->recs[k].id, strlen(m->recs[k].id), 0);
}

/* The record of id, added when add is set; HASHTAB_END when absent and not added. */
static uint32_t map_get(struct id_map *m, const char *id, int add)
{
    uint64_t h = hashtab_hash(id, strlen(id), 0);
    struct hashtab_probe p;
    for (uint32_t k = hashtab_first(&m->index, h, &p); k != HASHTAB_END;
         k = hashtab_next(&m->index, &p))
        if (strcmp(m->recs[k].id, id) == 0)
            return k;
    if (!add)
        return HASHTAB_END;
    uint32_t k = (uint32_t)m->n++;
    m->recs[k].id = xstrdup(id);
    m->keys[k] = m->recs[k].id;
    hashtab_add(&m->index, &p, k, id_hash, m);
    return k;
}

static void map_init(struct id_map *m, size_t n)
{
    memset(m, 0, sizeof *m);
    m->recs = xcalloc(n ? n : 1, sizeof *m->recs);
    m->keys = xcalloc(n ? n : 1, sizeof *m->keys);
}

static void map_free(struct id_map *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->recs[i].id);
    free(m->recs);
    free(m->keys);
    hashtab_free(&m->index);
}

struct work_table {
    char *table; /* as in the config: "t" or "schema.t" */
    char *id_column;
    char *done_column; /* NULL: a row with the id means done */
    /* per connection: */
    unsigned long gen; /* the connection the rest was learnt on; 0: none yet */
    enum work_table_id_kind kind;
    char typname[64];
    char *sql;
};

void work_table_free(struct work_table *t)
{
    if (!t)
        return;
    free(t->table);
    free(t->id_column);
    free(t->done_column);
    free(t->sql);
    free(t);
}

struct work_table *work_table_configure(struct cfg_node *map, const char *where, struct err *e)
{
    struct work_table *t = xcalloc(1, sizeof *t);
    if (cfg_get_nonempty(map, "table", &t->table, e) ||
        cfg_get_nonempty(map, "id_column", &t->id_column, e) ||
        cfg_get_nonempty(map, "done_column", &t->done_column, e) || cfg_finish(map, where, e))
        goto fail;
    if (!t->table || !t->id_column) {
        cfg_error(e, map, "missing required key \"%s\" in this mapping",
                  !t->table ? "table" : "id_column");
        goto fail;
    }
    char *qt = pg_table_sql(t->table);
    if (!qt) {
        cfg_error(e, cfg_at(map, "table"), "table: want \"table\" or \"schema.table\", got \"%s\"",
                  t->table);
        goto fail;
    }
    free(qt);
    if (t->done_column && strcmp(t->done_column, t->id_column) == 0) {
        cfg_error(e, cfg_at(map, "done_column"),
                  "done_column: want a column other than id_column (\"%s\")", t->id_column);
        goto fail;
    }
    return t;
fail:
    work_table_free(t);
    return NULL;
}

static void what_of(const struct work_table *t, char *what, size_t cap)
{
    snprintf(what, cap, "work_table \"%.300s\"", t->table);
}

int work_table_check(struct work_table *t, struct pg_conn *conn, const struct deadline *dl,
                     struct err *e)
{
    char what[400];
    what_of(t, what, sizeof what);
    struct pg_column cols[2] = {{t->id_column, PG_COL_ANY}, {t->done_column, PG_COL_ANY}};
    return pg_check_columns(conn, dl, what, t->table, cols, t->done_column ? 2 : 1, e);
}

/* On a fresh connection: the table and columns exist and may be read, and how ids compare. */
static int learn_column(struct work_table *t, struct pg_conn *conn, const char *what,
                        const struct deadline *dl, struct err *e)
{
    if (work_table_check(t, conn, dl, e))
        return -1;
    static const char sql[] =
        "SELECT t.typname FROM pg_catalog.pg_attribute a "
        "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND a.attnum > 0 "
        "AND NOT a.attisdropped";
    char *qt = pg_table_sql(t->table);
    const char *params[2] = {qt, t->id_column};
    PGresult *r = NULL;
    int rc = pg_query(conn, dl, what, sql, 2, params, &r, e);
    free(qt);
    if (rc)
        return -1;
    if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0)) {
        PQclear(r);
        return pg_error(conn, e, ERR_PROTOCOL, "%s: column \"%s\": no type in the catalogue", what,
                        t->id_column);
    }
    snprintf(t->typname, sizeof t->typname, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    t->kind = work_table_id_kind_of(t->typname);
    free(t->sql);
    t->sql = work_table_sql(t->table, t->id_column, t->done_column, t->kind);
    return 0;
}

int work_table_run(struct work_table *t, struct pg_conn *conn, unsigned long gen,
                   const char *const *ids, size_t n, const struct deadline *dl,
                   enum dead_letter_work *work, struct err *e)
{
    char what[400];
    what_of(t, what, sizeof what);
    if (t->gen != gen) {
        t->gen = 0;
        if (learn_column(t, conn, what, dl, e))
            return -1;
        t->gen = gen;
    }

    struct id_map m;
    map_init(&m, n);
    /* record of each id, HASHTAB_END for one the column cannot hold (unknown) */
    uint32_t *of = xcalloc(n ? n : 1, sizeof *of);
    char canon[WT_ID_MAX_BYTES + 1];
    for (size_t i = 0; i < n; i++) {
        work[i] = DL_WORK_UNKNOWN;
        of[i] = HASHTAB_END;
        if (work_table_id_canonical(t->kind, t->typname, ids[i], strlen(ids[i]), canon,
                                    sizeof canon) < 0)
            continue;
        of[i] = map_get(&m, canon, 1);
    }
    /* Always asked, with no id too: a database that went away shows now, not at the incident. */
    char *array = pg_text_array(m.keys, m.n);
    const char *params[1] = {array};
    PGresult *r = NULL;
    int rc = pg_query(conn, dl, what, t->sql, 1, params, &r, e);
    free(array);
    if (rc == 0 && PQnfields(r) != 2) {
        pg_error(conn, e, ERR_PROTOCOL, "%s: want 2 columns, got %d", what, PQnfields(r));
        rc = -1;
    }
    if (rc == 0)
        for (int row = 0; row < PQntuples(r); row++) {
            if (PQgetisnull(r, row, 0))
                continue;
            uint32_t k = map_get(&m, PQgetvalue(r, row, 0), 0);
            if (k == HASHTAB_END)
                continue; /* a text form we did not send: cannot be matched to a dead letter */
            m.recs[k].found = 1;
            if (!PQgetisnull(r, row, 1) && strcmp(PQgetvalue(r, row, 1), "t") == 0)
                m.recs[k].done = 1; /* several rows per id: done when any of them is */
        }
    PQclear(r);
    if (rc == 0)
        for (size_t i = 0; i < n; i++)
            if (of[i] != HASHTAB_END)
                work[i] =
                    m.recs[of[i]].found && m.recs[of[i]].done ? DL_WORK_DONE : DL_WORK_NOT_DONE;
    free(of);
    map_free(&m);
    if (rc)
        t->gen = 0; /* the caller drops the connection */
    return rc;
}
