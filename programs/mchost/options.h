/* options.h: mchost's command line. -X extensions are loaded and
 * initialized as their option is reached, as memcached does. */
#ifndef MCH_OPTIONS_H
#define MCH_OPTIONS_H

/* What main does after parsing. */
enum mch_options_status {
    MCH_OPTIONS_RUN,       /* start the server */
    MCH_OPTIONS_EXIT_OK,   /* -h or -V done */
    MCH_OPTIONS_EXIT_FAIL  /* bad option or failed extension (logged) */
};

/* Parses argv into mch_settings, loading extensions on the way. */
enum mch_options_status mch_options_parse(int argc, char **argv);

#endif /* MCH_OPTIONS_H */
