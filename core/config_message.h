/* config_message.h: what config.c (the getters) and config_yaml.c (the tree builder) share to word
 * their messages alike, "FILE:L:C: what was expected"; private to those two files (kinds use
 * config.h). Nothing here allocates anything the caller frees. */
#ifndef QREL_CONFIG_MESSAGE_H
#define QREL_CONFIG_MESSAGE_H

#include "config.h"
#include "err.h"

/* Values are quoted in messages at most this long (cfg_quote), so the key and position always
 * fit. */
#define CFG_QUOTE_MAX 160

/* "null", "a string", "a mapping", "a list": a node's kind as a message names it. */
const char *cfg_kind_word(enum cfg_kind k);
/* Sets e to ERR_CONFIG "FILE:L:C: <fmt>" (no position when file is NULL); returns -1. */
int cfg_error_at(struct err *e, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
