/* SPDX-License-Identifier: Apache-2.0 */
/* A library loaded by its SONAME, its functions looked up by name into a
 * table of typed pointers (a struct): what a mode uses, loaded in that mode. */
#pragma once

#include <stddef.h>

typedef struct DlSymbol {
    size_t offset; /* of the function pointer in the table */
    const char *name;
} DlSymbol;

#define DL_SYMBOL(table, field, name)                                                              \
    { offsetof(table, field), name }

/* dlopen(soname) and every symbol into the table of ret_size bytes at ret,
 * which is written only when all were found. The library is never closed:
 * its constructors may not be undone. < 0 (-ELIBACC) with the loader's
 * words in err. */
int dl_table_load(const char *soname, const DlSymbol *symbols, size_t n, void *ret, size_t ret_size,
                  char *err, size_t err_size);
