/* live_page.c: the page GET / serves on the HTTP port (placeholder until
 * the page below is written). */
#include "config.h"

#include "engine/server/metrics.h"

const char cnt_live_page[] = "<!DOCTYPE html><title>counter</title>\n";
