/* registry.c: the static table of collector kinds this build has. The rows come from
 * collectors/CMakeLists.txt, which writes one QREL_KIND(name) line per kind whose
 * QREL_WITH_<KIND> option is on into kinds.inc: a new kind is its folder collectors/<kind>/ and
 * one qrel_kind() line there, and nothing in C names a build option. */
#include <string.h>

#include "collector.h"

#define QREL_KIND(name) extern const struct collector_kind name##_kind;
#include "kinds.inc"
#undef QREL_KIND

#define QREL_KIND(name) &name##_kind,
static const struct collector_kind *const kinds[] = {
#include "kinds.inc"
    NULL,
};
#undef QREL_KIND

size_t collector_kind_count(void)
{
    return sizeof kinds / sizeof kinds[0] - 1;
}

const struct collector_kind *collector_kind_at(size_t i)
{
    return i < collector_kind_count() ? kinds[i] : NULL;
}

const struct collector_kind *collector_kind_find(const char *name)
{
    for (size_t i = 0; i < collector_kind_count(); i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return NULL;
}
