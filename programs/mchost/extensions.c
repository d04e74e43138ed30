/* extensions.c: loads a -X extension: split PATH[,CONFIG] at the first
 * comma, dlopen RTLD_NOW|RTLD_LOCAL, call the entry point. Loaded libraries
 * are never closed: their threads and exit handlers outlive main(). */
#include "config.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <memcached/extension.h>

#include "programs/mchost/api.h"
#include "programs/mchost/extensions.h"
#include "programs/mchost/logger.h"

#define MCH_ENTRY_POINT "memcached_extensions_initialize"

/* Loads and initializes the extension named by "PATH[,CONFIG]". */
int mch_extension_load(const char *arg)
{
    const char *comma = strchr(arg, ',');
    const char *config = comma ? comma + 1 : NULL; /* points into argv */
    char *path = comma ? strndup(arg, (size_t)(comma - arg)) : strdup(arg);
    MEMCACHED_EXTENSIONS_INITIALIZE init;
    EXTENSION_ERROR_CODE rc;
    void *lib;

    if (path == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "out of memory loading %s", arg);
        return -1;
    }
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "Failed to load extension %s: %s",
                path, dlerror());
        free(path);
        return -1;
    }
    init = (MEMCACHED_EXTENSIONS_INITIALIZE)dlsym(lib, MCH_ENTRY_POINT);
    if (init == NULL) {
        mch_log(EXTENSION_LOG_WARNING,
                "Extension %s has no " MCH_ENTRY_POINT ": %s", path,
                dlerror());
        dlclose(lib);
        free(path);
        return -1;
    }
    rc = init(config, mch_api_get);
    if (rc != EXTENSION_SUCCESS) {
        mch_log(EXTENSION_LOG_WARNING,
                "Failed to initialize extension %s (error 0x%02x)", path,
                (unsigned)rc);
        dlclose(lib);
        free(path);
        return -1;
    }
    mch_log(EXTENSION_LOG_INFO, "Loaded extension %s", path);
    free(path);
    return 0;
}
