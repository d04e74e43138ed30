/* extensions.h: loading -X extensions (dlopen + entry point), as the
 * doc/host-interface.md "Loading" section describes. */
#ifndef MCH_EXTENSIONS_H
#define MCH_EXTENSIONS_H

/* Loads and initializes the extension named by "PATH[,CONFIG]"; on any
 * failure logs why, unloads it and returns -1 (the caller exits). */
int mch_extension_load(const char *arg);

#endif /* MCH_EXTENSIONS_H */
