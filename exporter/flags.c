/* flags.c: see flags.h. */
#include "flags.h"

#include <string.h>

struct flag *flags_find(struct flag *flags, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(flags[i].name, name) == 0)
            return &flags[i];
    return NULL;
}

int flags_bool(const struct flag *f)
{
    return f->value && strcmp(f->value, "true") == 0;
}

int flags_collect(int argc, char **argv, int start, const char *name, const char **out, size_t max,
                  size_t *n, struct err *e)
{
    size_t len = strlen(name);
    *n = 0;
    for (int i = start; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, len) != 0)
            continue;
        const char *v = NULL;
        if (a[2 + len] == '=')
            v = a + 3 + len;
        else if (a[2 + len] == '\0' && i + 1 < argc)
            v = argv[++i];
        if (!v)
            continue; /* flags_parse says what is wrong */
        if (*n == max)
            return err_set(e, ERR_CONFIG, "flag --%s: at most %zu values", name, max);
        out[(*n)++] = v;
    }
    return 0;
}

int flags_parse(struct flag *flags, size_t n, int argc, char **argv, int start, int *npos,
                int *help, struct err *e)
{
    for (size_t i = 0; i < n; i++) {
        flags[i].value = flags[i].def;
        flags[i].given = 0;
    }
    *npos = 0;
    *help = 0;
    for (int i = start; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            argv[start + (*npos)++] = argv[i];
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        struct flag *f = NULL;
        for (size_t j = 0; j < n; j++)
            if (strlen(flags[j].name) == len && strncmp(flags[j].name, name, len) == 0)
                f = &flags[j];
        if (!f)
            return err_set(e, ERR_CONFIG, "unknown flag --%.*s (see --help)", (int)len, name);
        if (f->type == FLAG_BOOL) {
            const char *v = eq ? eq + 1 : "true";
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
                return err_set(e, ERR_CONFIG, "flag --%s: want true or false, got \"%s\"", f->name,
                               v);
            f->value = v;
        } else if (eq) {
            f->value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return err_set(e, ERR_CONFIG, "flag --%s needs a value", f->name);
            f->value = argv[++i];
        }
        f->given++;
    }
    return 0;
}

void flags_usage(FILE *out, const char *usage, const struct flag *flags, size_t n)
{
    fprintf(out, "%s\n\nFlags:\n", usage);
    fprintf(out, "  -h, --help  Show this help.\n");
    for (size_t i = 0; i < n; i++) {
        const struct flag *f = &flags[i];
        if (f->type == FLAG_BOOL)
            fprintf(out, "  --%s\n      %s\n", f->name, f->help);
        else if (f->type == FLAG_LIST)
            fprintf(out, "  --%s=VALUE ...\n      %s (default: %s)\n", f->name, f->help,
                    f->def ? f->def : "none");
        else if (f->def)
            fprintf(out, "  --%s=VALUE\n      %s (default: %s)\n", f->name, f->help, f->def);
        else
            fprintf(out, "  --%s=VALUE\n      %s\n", f->name, f->help);
    }
}
