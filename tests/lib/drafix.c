/* Fixtures for the DRA tests (see drafix.h). */
#include "drafix.h"

#include <stdio.h>
#include <stdlib.h>

#include "strv.h"

Inventory *drafix_inventory(const NodeConfig *c, unsigned n) {
    Inventory *inv = calloc(1, sizeof(*inv));

    if (!inv)
        return NULL;
    inv->config = c;
    inv->units = calloc(n ? n : 1, sizeof(Unit));
    if (!inv->units) {
        free(inv);
        return NULL;
    }
    inv->n_units = n;
    for (unsigned k = 0; k < n; k++) {
        Unit *u = &inv->units[k];
        u->rail = k;
        unit_set_names(u);
        u->tenant = k < n / 2 ? 0 : 1;
        u->has_gpu = true;
        snprintf(u->gpu_id, sizeof(u->gpu_id), "GPU-%u", k);
        if (strv_pushf(&u->gpu_devices, "/dev/railgate/gpu%u", k) < 0) {
            inventory_free(inv);
            return NULL;
        }
        snprintf(u->netdev, sizeof(u->netdev), "rail%u", k);
        snprintf(u->health_netdev, sizeof(u->health_netdev), "rail%u", k);
        u->numa = k < n / 2 ? 0 : 1;
    }
    if (n > 0)
        snprintf(inv->units[0].rdma, sizeof(inv->units[0].rdma), "mlx5_0");
    return inv;
}
