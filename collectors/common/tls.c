/* tls.c: loading a tls_config's files with GnuTLS (tls.h), for the config check of every kind
 * and for the Redis kinds' sessions (redis_tls.c). The HTTP kinds hand the same files to libcurl,
 * so loading them here first makes --config.check refuse what a scrape would fail on. */
#include "common/tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Loads cfg's files into a new credentials object. On error returns -1 with *key naming the key
 * at fault and msg saying why (no password in it). */
int tls_load_credentials(const struct tls_config *cfg, gnutls_certificate_credentials_t *out,
                         const char **key, char *msg, size_t msgsz)
{
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) < 0) {
        *key = "tls_config";
        snprintf(msg, msgsz, "cannot allocate TLS credentials");
        return -1;
    }
    int rc;
    const char *bad = NULL;
    if (cfg->ca_file) {
        bad = "ca_file";
        if (access(cfg->ca_file, R_OK) != 0) {
            snprintf(msg, msgsz, "cannot read \"%s\": %s", cfg->ca_file, strerror(errno));
            goto fail;
        }
        rc = gnutls_certificate_set_x509_trust_file(cred, cfg->ca_file, GNUTLS_X509_FMT_PEM);
        if (rc <= 0) {
            snprintf(msg, msgsz, "no PEM certificate in \"%s\"%s%s", cfg->ca_file,
                     rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
            goto fail;
        }
    } else if (!cfg->insecure_skip_verify) {
        bad = "tls_config";
        rc = gnutls_certificate_set_x509_system_trust(cred);
        if (rc < 0) {
            snprintf(msg, msgsz, "cannot load the system's CA certificates: %s",
                     gnutls_strerror(rc));
            goto fail;
        }
    }
    if (cfg->cert_file) {
        const char *files[2][2] = {{"cert_file", cfg->cert_file}, {"key_file", cfg->key_file}};
        for (int i = 0; i < 2; i++) {
            bad = files[i][0];
            if (access(files[i][1], R_OK) != 0) {
                snprintf(msg, msgsz, "cannot read \"%s\": %s", files[i][1], strerror(errno));
                goto fail;
            }
        }
        rc = gnutls_certificate_set_x509_key_file2(cred, cfg->cert_file, cfg->key_file,
                                                   GNUTLS_X509_FMT_PEM, cfg->key_password, 0);
        if (rc < 0) {
            bad = "key_file";
            snprintf(msg, msgsz, "cannot load the certificate and key (\"%s\", \"%s\"): %s",
                     cfg->cert_file, cfg->key_file, gnutls_strerror(rc));
            goto fail;
        }
    }
    *out = cred;
    return 0;
fail:
    *key = bad;
    gnutls_certificate_free_credentials(cred);
    return -1;
}

int tls_config_check(struct cfg_node *map, const struct tls_config *t, struct err *e)
{
    if (!t)
        return 0;
    gnutls_certificate_credentials_t cred;
    const char *key = NULL;
    char msg[400];
    if (tls_load_credentials(t, &cred, &key, msg, sizeof msg)) {
        struct cfg_node *tls = cfg_at(map, "tls_config");
        struct cfg_node *at = tls ? cfg_at(tls, key) : NULL;
        return cfg_error(e, at ? at : tls, "tls_config: %s: %s", key, msg);
    }
    gnutls_certificate_free_credentials(cred);
    return 0;
}
