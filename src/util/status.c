/* status.c -- names and messages for enum st_status, from ST_STATUS_MAP. */
#include "strata/status.h"

static const char *const status_names[] = {
#define ST_STATUS_NAME(name, msg) #name,
    ST_STATUS_MAP(ST_STATUS_NAME)
#undef ST_STATUS_NAME
};

static const char *const status_msgs[] = {
#define ST_STATUS_MSG(name, msg) msg,
    ST_STATUS_MAP(ST_STATUS_MSG)
#undef ST_STATUS_MSG
};

const char *st_status_name(enum st_status s)
{
    if ((unsigned)s >= ST_STATUS_COUNT)
        return "UNKNOWN";
    return status_names[s];
}

const char *st_status_msg(enum st_status s)
{
    if ((unsigned)s >= ST_STATUS_COUNT)
        return "unknown status";
    return status_msgs[s];
}
