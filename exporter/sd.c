/* sd.c: see sd.h. */
#include "sd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sd_render(struct buf *out, const struct sources *src, const char *advertise)
{
    buf_putc(out, '[');
    for (size_t i = 0; i < src->n; i++) {
        const struct collector *c = src->items[i];
        buf_puts(out, i ? ",\n{\"targets\":[" : "\n{\"targets\":[");
        buf_json_string(out, advertise);
        buf_puts(out, "],\"labels\":{\"__metrics_path__\":\"/probe\",\"__param_target\":");
        buf_json_string(out, c->name);
        buf_puts(out, ",\"source\":");
        buf_json_string(out, c->name);
        buf_puts(out, ",\"kind\":");
        buf_json_string(out, c->kind->name);
        buf_puts(out, "}}");
    }
    buf_puts(out, src->n ? "\n]\n" : "]\n");
}

static int is_wildcard(const char *host, size_t len)
{
    return len == 0 || (len == 7 && memcmp(host, "0.0.0.0", 7) == 0) ||
           (len == 2 && memcmp(host, "::", 2) == 0) || (len == 4 && memcmp(host, "[::]", 4) == 0);
}

/* A host Prometheus can dial and /sd can print as it is: a bracketed IPv6 address, or a DNS
 * name or IPv4 address (letters, digits, '-', '.', '_'; at most 253 bytes). Anything else
 * (a space, a quote, '@', invalid UTF-8) would reach the JSON and the target list. */
static int host_ok(const char *h, size_t len)
{
    if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
        size_t in = len - 2;
        return in >= 2 && strspn(h + 1, "0123456789abcdefABCDEF:.") == in &&
               memchr(h + 1, ':', in) != NULL;
    }
    static const char name[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._";
    return len >= 1 && len <= 253 && strspn(h, name) >= len;
}

int sd_advertise_address(const char *flag, const char *bound_host, unsigned port,
                         const char *hostname, char *out, size_t outlen, struct err *e)
{
    if (flag) {
        const char *colon = strrchr(flag, ':');
        const char *p = colon ? colon + 1 : "";
        size_t digits = strspn(p, "0123456789");
        long n = digits ? strtol(p, NULL, 10) : 0;
        if (!colon || is_wildcard(flag, (size_t)(colon - flag)) ||
            !host_ok(flag, (size_t)(colon - flag)) || !*p || p[digits] || digits > 5 || n < 1 ||
            n > 65535)
            return err_set(e, ERR_CONFIG,
                           "--web.advertise-address \"%s\": want host:port as Prometheus reaches "
                           "this exporter (a DNS name, IPv4 or [IPv6] host, not a wildcard; port 1 "
                           "to 65535)",
                           flag);
        if ((size_t)snprintf(out, outlen, "%s", flag) >= outlen)
            return err_set(e, ERR_CONFIG, "--web.advertise-address \"%s\" is too long", flag);
        return 0;
    }
    const char *h = is_wildcard(bound_host, strlen(bound_host)) ? hostname : bound_host;
    int n = strchr(h, ':') ? snprintf(out, outlen, "[%s]:%u", h, port)
                           : snprintf(out, outlen, "%s:%u", h, port);
    if (n < 0 || (size_t)n >= outlen)
        return err_set(e, ERR_CONFIG, "the advertised address \"%s:%u\" is too long", h, port);
    return 0;
}
