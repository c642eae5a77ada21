/* postgres/work_table.c: the work table of a dead-letter join (see the header for why).
 *
 * One statement per join and scrape, whatever the number of dead letters, with the ids as one
 * array parameter so nothing a broker holds is ever spliced into SQL. The identifiers from the
 * config are quoted when the statement is built, as the sections do. The server casts each id to
 * the column's type and compares with the type's own equality, so "2.0" finds the numeric 2 and
 * "ORDER-A" the citext 'Order-A'; it answers with the position of each id found, not the
 * column's text, which for such types is not the producer's spelling. An id the type cannot
 * read would make that cast fail the whole statement, so each id is checked here first, with
 * the server's own input rules per type (PostgreSQL 15 has no pg_input_is_valid), and one that
 * fails is unknown and not sent. */
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

/* The longest name PostgreSQL keeps (NAMEDATALEN - 1): a longer id would be cut to a prefix. */
#define WT_NAME_MAX_BYTES 63

enum work_table_id_kind work_table_id_kind_of(const char *typname)
{
    if (strcmp(typname, "int2") == 0 || strcmp(typname, "int4") == 0 ||
        strcmp(typname, "int8") == 0)
        return WT_ID_INT;
    if (strcmp(typname, "numeric") == 0)
        return WT_ID_NUMERIC;
    if (strcmp(typname, "uuid") == 0)
        return WT_ID_UUID;
    if (strcmp(typname, "text") == 0 || strcmp(typname, "varchar") == 0 ||
        strcmp(typname, "name") == 0 || strcmp(typname, "citext") == 0)
        return WT_ID_TEXT;
    if (strcmp(typname, "bpchar") == 0)
        return WT_ID_BPCHAR;
    return WT_ID_UNSUPPORTED;
}

/* The server's isspace() (C locale), which its number inputs skip. */
static int pg_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The word w at id[i..len), ASCII case ignored (pg_strncasecmp). */
static int word_at(const char *id, size_t i, size_t len, const char *w)
{
    size_t n = strlen(w);
    if (len - i < n)
        return 0;
    for (size_t k = 0; k < n; k++) {
        char c = id[i + k];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        char d = w[k] >= 'A' && w[k] <= 'Z' ? (char)(w[k] - 'A' + 'a') : w[k];
        if (c != d)
            return 0;
    }
    return 1;
}

/* PostgreSQL 15's numeric input (numeric_in, set_var_from_str): spaces around; NaN or an
 * infinity in its spellings; or a sign, digits with at most one '.', at least one digit first
 * (after the '.'), and an exponent as strtol reads it (spaces, a sign, digits). The exponent is
 * kept within +-1000 so that no id of 1024 bytes can overflow the type (the server's own limit
 * is far above): beyond that it is not an id anyone writes, and it is unknown. */
static int valid_numeric(const char *id, size_t len)
{
    static const char *const special[] = {"NaN", "Infinity", "+Infinity", "-Infinity",
                                          "inf", "+inf",     "-inf"};
    size_t i = 0;
    while (i < len && pg_space(id[i]))
        i++;
    for (size_t k = 0; k < sizeof special / sizeof *special; k++)
        if (word_at(id, i, len, special[k])) {
            i += strlen(special[k]);
            goto trailing;
        }
    if (i < len && (id[i] == '+' || id[i] == '-'))
        i++;
    int dot = 0;
    if (i < len && id[i] == '.') {
        dot = 1;
        i++;
    }
    if (i == len || !is_digit(id[i]))
        return 0;
    for (; i < len; i++) {
        if (id[i] == '.') {
            if (dot)
                return 0;
            dot = 1;
        } else if (!is_digit(id[i])) {
            break;
        }
    }
    if (i < len && (id[i] == 'e' || id[i] == 'E')) {
        i++;
        while (i < len && pg_space(id[i]))
            i++;
        if (i < len && (id[i] == '+' || id[i] == '-'))
            i++;
        size_t first = i;
        long exp = 0;
        for (; i < len && is_digit(id[i]); i++)
            if (exp <= 1000)
                exp = exp * 10 + (id[i] - '0');
        if (i == first || exp > 1000)
            return 0;
    }
trailing:
    while (i < len && pg_space(id[i]))
        i++;
    return i == len;
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
    while (i < end && pg_space(id[i]))
        i++;
    while (end > i && pg_space(id[end - 1]))
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
    case WT_ID_NUMERIC:
        /* as it is: the server reads it as numeric and compares values */
        return valid_numeric(id, len) ? put_out(out, cap, id, len) : -1;
    case WT_ID_UUID:
        return canonical_uuid(id, len, out, cap);
    case WT_ID_BPCHAR:
        while (len > 0 && id[len - 1] == ' ')
            len--;
        return put_out(out, cap, id, len);
    case WT_ID_TEXT:
        if (typname && strcmp(typname, "name") == 0 && len > WT_NAME_MAX_BYTES)
            return -1;
        return put_out(out, cap, id, len);
    case WT_ID_UNSUPPORTED:
        break;
    }
    return -1;
}

char *work_table_sql(const char *table, const char *id_column, const char *done_column,
                     const char *type_schema, const char *type_name)
{
    char *t = pg_table_sql(table);
    if (!t)
        return NULL;
    char *id = pg_quote_ident(id_column);
    char *done = done_column ? pg_quote_ident(done_column) : NULL;
    char *donex = done ? xasprintf("w.%s IS NOT NULL", done) : xstrdup("true");
    char *sch = pg_quote_ident(type_schema);
    char *typ = pg_quote_ident(type_name);
    /* Each id cast to the column's (base) type, without its typmod: a varchar(8) cast would cut
     * a longer id, a numeric(12,2) one fail on a large number. The type's own = is named with
     * its schema: citext's, in a schema off the session's search_path, would otherwise not be
     * found and both sides compared as text. The join is on the column itself, so its index
     * serves (a nested loop of index probes for a few ids). */
    char *sql = xasprintf("SELECT i.n, bool_or(%s) FROM unnest($1::text[]) WITH ORDINALITY AS "
                          "i(id, n) JOIN %s AS w ON w.%s OPERATOR(%s.=) i.id::%s.%s GROUP BY i.n",
                          donex, t, id, sch, sch, typ);
    free(t);
    free(id);
    free(done);
    free(donex);
    free(sch);
    free(typ);
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

/* The record of id, added when new: ids spelt alike (after the canonical form) are asked once. */
static uint32_t map_add(struct id_map *m, const char *id)
{
    uint64_t h = hashtab_hash(id, strlen(id), 0);
    struct hashtab_probe p;
    for (uint32_t k = hashtab_first(&m->index, h, &p); k != HASHTAB_END;
         k = hashtab_next(&m->index, &p))
        if (strcmp(m->recs[k].id, id) == 0)
            return k;
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
    char typname[64]; /* the column's type, a domain's base type: pg_type.typname */
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

/* The column's type (a domain's base type) from the catalogue, and the statement for it. A type
 * qrel cannot check ids for in advance fails (ERR_QUERY, as a wrong column type does for the
 * sections): comparing such a column's text form instead gets spellings wrong. */
static int learn_type(struct work_table *t, struct pg_conn *conn, const char *what,
                      const struct deadline *dl, struct err *e)
{
    static const char sql[] =
        "SELECT b.typname, n.nspname, b.typtype, pg_catalog.format_type(a.atttypid, a.atttypmod) "
        "FROM pg_catalog.pg_attribute a "
        "JOIN pg_catalog.pg_type c ON c.oid = a.atttypid "
        "JOIN pg_catalog.pg_type b ON b.oid = CASE c.typtype WHEN 'd' THEN c.typbasetype "
        "ELSE c.oid END "
        "JOIN pg_catalog.pg_namespace n ON n.oid = b.typnamespace "
        "WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND a.attnum > 0 "
        "AND NOT a.attisdropped";
    char *qt = pg_table_sql(t->table);
    const char *params[2] = {qt, t->id_column};
    PGresult *r = NULL;
    int rc = pg_query(conn, dl, what, sql, 2, params, &r, e);
    free(qt);
    if (rc)
        return -1;
    if (PQntuples(r) != 1 || PQnfields(r) != 4 || PQgetisnull(r, 0, 0)) {
        PQclear(r);
        return pg_error(conn, e, ERR_PROTOCOL, "%s: column \"%s\": no type in the catalogue", what,
                        t->id_column);
    }
    const char *typname = PQgetvalue(r, 0, 0), *nsp = PQgetvalue(r, 0, 1);
    enum work_table_id_kind kind = work_table_id_kind_of(typname);
    /* Built-in types only from pg_catalog; citext from wherever its extension was created. */
    if (strcmp(PQgetvalue(r, 0, 2), "b") != 0 ||
        (strcmp(typname, "citext") != 0 && strcmp(nsp, "pg_catalog") != 0))
        kind = WT_ID_UNSUPPORTED;
    if (kind == WT_ID_UNSUPPORTED) {
        pg_error(conn, e, ERR_QUERY,
                 "%s: column \"%s\" is %.100s: want an id column of type smallint, integer, "
                 "bigint, numeric, uuid, text, varchar, char, name or citext (or a domain over "
                 "one)",
                 what, t->id_column, PQgetvalue(r, 0, 3));
        PQclear(r);
        return -1;
    }
    snprintf(t->typname, sizeof t->typname, "%s", typname);
    t->kind = kind;
    free(t->sql);
    t->sql = work_table_sql(t->table, t->id_column, t->done_column, nsp, typname);
    PQclear(r);
    return 0;
}

int work_table_check(struct work_table *t, struct pg_conn *conn, const struct deadline *dl,
                     struct err *e)
{
    char what[400];
    what_of(t, what, sizeof what);
    struct pg_column cols[2] = {{t->id_column, PG_COL_ANY}, {t->done_column, PG_COL_ANY}};
    if (pg_check_columns(conn, dl, what, t->table, cols, t->done_column ? 2 : 1, e))
        return -1;
    return learn_type(t, conn, what, dl, e);
}

/* The 1-based position of an id in the array parameter, as the statement returns it. */
static size_t position_of(const PGresult *r, int row, size_t n)
{
    if (PQgetisnull(r, row, 0))
        return 0;
    char *end;
    unsigned long long v = strtoull(PQgetvalue(r, row, 0), &end, 10);
    return *end == '\0' && v >= 1 && v <= n ? (size_t)v : 0;
}

/* A lookup sent and not yet collected: what its rows are matched back with. */
struct work_table_pending {
    struct work_table *t;
    struct pg_conn *conn;
    struct id_map m;
    uint32_t *of; /* record of each id, HASHTAB_END for one the column cannot hold (unknown) */
    size_t n;
};

struct work_table_pending *work_table_send(struct work_table *t, struct pg_conn *conn,
                                           unsigned long gen, const char *const *ids, size_t n,
                                           const struct deadline *dl, struct err *e)
{
    char what[400];
    what_of(t, what, sizeof what);
    if (t->gen != gen) {
        /* On a fresh connection: the table and columns exist and may be read, and their type. */
        t->gen = 0;
        if (work_table_check(t, conn, dl, e))
            return NULL;
        t->gen = gen;
    }
    struct work_table_pending *p = xcalloc(1, sizeof *p);
    p->t = t;
    p->conn = conn;
    p->n = n;
    map_init(&p->m, n);
    p->of = xcalloc(n ? n : 1, sizeof *p->of);
    char canon[WT_ID_MAX_BYTES + 1];
    for (size_t i = 0; i < n; i++) {
        p->of[i] = HASHTAB_END;
        if (work_table_id_canonical(t->kind, t->typname, ids[i], strlen(ids[i]), canon,
                                    sizeof canon) < 0)
            continue;
        p->of[i] = map_add(&p->m, canon);
    }
    /* Always asked, with no id too: a database that went away shows now, not at the incident. */
    char *array = pg_text_array(p->m.keys, p->m.n);
    const char *params[1] = {array};
    int rc = pg_query_send(conn, dl, what, t->sql, 1, params, e);
    free(array);
    if (rc) {
        t->gen = 0; /* the caller drops the connection */
        work_table_pending_free(p);
        return NULL;
    }
    return p;
}

void work_table_pending_free(struct work_table_pending *p)
{
    if (!p)
        return;
    free(p->of);
    map_free(&p->m);
    free(p);
}

int work_table_collect(struct work_table_pending *p, const struct deadline *dl,
                       enum dead_letter_work *work, struct err *e)
{
    struct work_table *t = p->t;
    char what[400];
    what_of(t, what, sizeof what);
    struct id_map *m = &p->m;
    for (size_t i = 0; i < p->n; i++)
        work[i] = DL_WORK_UNKNOWN;
    PGresult *r = NULL;
    int rc = pg_query_wait(p->conn, dl, what, &r, e);
    if (rc == 0 && PQnfields(r) != 2) {
        pg_error(p->conn, e, ERR_PROTOCOL, "%s: want 2 columns, got %d", what, PQnfields(r));
        rc = -1;
    }
    if (rc == 0)
        for (int row = 0; row < PQntuples(r); row++) {
            size_t k = position_of(r, row, m->n);
            if (k == 0)
                continue; /* not a position we sent: cannot be matched to a dead letter */
            m->recs[k - 1].found = 1;
            if (!PQgetisnull(r, row, 1) && strcmp(PQgetvalue(r, row, 1), "t") == 0)
                m->recs[k - 1].done = 1; /* several rows per id: done when any of them is */
        }
    PQclear(r);
    if (rc == 0)
        for (size_t i = 0; i < p->n; i++)
            if (p->of[i] != HASHTAB_END)
                work[i] = m->recs[p->of[i]].found && m->recs[p->of[i]].done ? DL_WORK_DONE
                                                                            : DL_WORK_NOT_DONE;
    if (rc)
        t->gen = 0; /* the caller drops the connection */
    work_table_pending_free(p);
    return rc;
}

int work_table_run(struct work_table *t, struct pg_conn *conn, unsigned long gen,
                   const char *const *ids, size_t n, const struct deadline *dl,
                   enum dead_letter_work *work, struct err *e)
{
    for (size_t i = 0; i < n; i++)
        work[i] = DL_WORK_UNKNOWN;
    struct work_table_pending *p = work_table_send(t, conn, gen, ids, n, dl, e);
    return p ? work_table_collect(p, dl, work, e) : -1;
}
