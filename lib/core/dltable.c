/* SPDX-License-Identifier: Apache-2.0 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dltable.h"
#include "macro.h"

int dl_table_load(const char *soname, const DlSymbol *symbols, size_t n, void *ret, size_t ret_size,
                  char *err, size_t err_size) {
    void *so = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

    if (!so) {
        snprintf(err, err_size, "%s", dlerror());
        return -ELIBACC;
    }
    _cleanup_free_ char *table = calloc(1, ret_size);
    if (!table)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(so, symbols[i].name);

        if (!f || symbols[i].offset + sizeof(f) > ret_size) {
            snprintf(err, err_size, "%s: no %s", soname, symbols[i].name);
            return -ELIBACC;
        }
        memcpy(table + symbols[i].offset, &f, sizeof(f));
    }
    memcpy(ret, table, ret_size);
    return 0;
}
