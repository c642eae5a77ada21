/* glob.h: the one glob syntax of qrel's `pattern` keys, for the kinds that match names themselves.
 *
 * `pattern` is a shell glob in every kind: `*` any run of characters, `?` one character, `[...]`
 * a set (fnmatch(3) without flags, so `*` also crosses `.` and `/`, as Redis's SCAN MATCH does).
 * Kinds that also take a regular expression call it `regex`. Because some kinds once read
 * `pattern` as a regular expression, glob_regex_syntax tells a value written as one, so an old
 * config is refused instead of silently matching nothing. */
#ifndef QREL_GLOB_H
#define QREL_GLOB_H

/* 1 when name matches the whole glob, else 0. */
int glob_match(const char *glob, const char *name);

/* The first piece of s that only a regular expression would use ("\\", "^", "$", "+", "(", ")",
 * "|", "{", "}", ".*"), as a static string, or NULL when s reads as a glob. */
const char *glob_regex_syntax(const char *s);

#endif
