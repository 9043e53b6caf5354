/* Fixtures for the DRA tests (see drafix.h). */
#include "drafix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const char *drafix_env_of(json_t *env, const char *key) {
    size_t i, n = strlen(key);
    json_t *v;

    json_array_foreach(env, i, v) {
        const char *s = json_string_value(v);
        if (s && strncmp(s, key, n) == 0 && s[n] == '=')
            return s + n + 1;
    }
    return NULL;
}

int drafix_api(const char *dir, FakeApi **ret_api, KubeClient **ret_kube) {
    char kc[4096];
    RgError err = {0};
    int r;

    if ((size_t)snprintf(kc, sizeof(kc), "%s/kubeconfig.json", dir) >= sizeof(kc))
        return -ENAMETOOLONG;
    r = fakeapi_start(ret_api);
    if (r < 0)
        return r;
    r = fakeapi_write_kubeconfig(*ret_api, kc, NULL);
    if (r >= 0)
        r = kube_client_from_kubeconfig(kc, ret_kube, &err);
    if (r < 0) {
        fakeapi_stop(*ret_api);
        *ret_api = NULL;
    }
    return r;
}
