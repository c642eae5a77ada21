/* glob.c: glob matching and the regex look-alike check of glob.h. */
#include "glob.h"

#include <fnmatch.h>
#include <string.h>

int glob_match(const char *glob, const char *name)
{
    return fnmatch(glob, name, 0) == 0;
}

const char *glob_regex_syntax(const char *s)
{
    /* ".*" first: it is the usual way a regex says "anything", and as a glob it would want a
     * literal dot. A glob that means a dot then anything can say "[.]*". */
    if (strstr(s, ".*"))
        return ".*";
    static const char *const only_regex[] = {"\\", "^", "$", "+", "(", ")", "|", "{", "}"};
    for (size_t i = 0; i < sizeof only_regex / sizeof only_regex[0]; i++)
        if (strchr(s, only_regex[i][0]))
            return only_regex[i];
    return NULL;
}
