/* SPDX-License-Identifier: Apache-2.0 */
/* n-tuple rules and RSS flow hash fields through SIOCETHTOOL. */
#include "ethtool-rxnfc.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "macro.h"

static const struct {
    uint32_t type;
    const char *name;
} flow_types[RXNFC_FLOW_TYPES] = {
    {TCP_V4_FLOW, "tcp4"},      {UDP_V4_FLOW, "udp4"},      {SCTP_V4_FLOW, "sctp4"},
    {AH_ESP_V4_FLOW, "ahesp4"}, {TCP_V6_FLOW, "tcp6"},      {UDP_V6_FLOW, "udp6"},
    {SCTP_V6_FLOW, "sctp6"},    {AH_ESP_V6_FLOW, "ahesp6"}, {AH_V4_FLOW, "ah4"},
    {ESP_V4_FLOW, "esp4"},      {AH_V6_FLOW, "ah6"},        {ESP_V6_FLOW, "esp6"},
    {IPV4_FLOW, "ip4"},         {IPV6_FLOW, "ip6"},
};

typedef struct Dev {
    int fd;
    char name[IF_NAMESIZE];
} Dev;

static int eth_ioctl(const Dev *d, void *data) {
    struct ifreq ifr;

    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, d->name, sizeof(d->name));
    ifr.ifr_data = data;
    return ioctl(d->fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
}

/* A socket to ask through, once ifname is the link at ifindex. */
static int dev_open(const char *ifname, int ifindex, Dev *d) {
    struct ifreq ifr;

    if (!ifname[0] || strlen(ifname) >= IF_NAMESIZE)
        return -EINVAL;
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", ifname);
    d->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (d->fd < 0)
        return -errno;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, d->name, sizeof(d->name));
    if (ioctl(d->fd, SIOCGIFINDEX, &ifr) < 0 || ifr.ifr_ifindex != ifindex) {
        close(d->fd);
        return -ENODEV;
    }
    return 0;
}

void rxnfc_done(RxnfcState *s) {
    if (!s)
        return;
    free(s->rules);
    free(s->rss_indir);
    free(s->rss_key);
    *s = (RxnfcState){0};
}

/* A driver without the request: EOPNOTSUPP, or EINVAL from some. */
static bool unsupported(int r) {
    return r == -EOPNOTSUPP || r == -EINVAL;
}

bool rxnfc_any(const RxnfcState *s) {
    return s->have_rules || s->hash_have || s->have_rss || s->have_tstamp;
}

static int tstamp_ioctl(const Dev *d, unsigned long req, struct hwtstamp_config *c) {
    struct ifreq ifr;

    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, d->name, sizeof(d->name));
    ifr.ifr_data = (void *)c;
    return ioctl(d->fd, req, &ifr) < 0 ? -errno : 0;
}

static int tstamp_get(const Dev *d, RxnfcState *s) {
    int r = tstamp_ioctl(d, SIOCGHWTSTAMP, &s->tstamp);

    if (unsupported(r))
        return 0; /* no timestamping in the driver */
    if (r < 0)
        return r;
    s->have_tstamp = true;
    return 0;
}

static bool tstamp_same(const RxnfcState *a, const RxnfcState *b) {
    return a->have_tstamp == b->have_tstamp && a->tstamp.flags == b->tstamp.flags &&
           a->tstamp.tx_type == b->tstamp.tx_type && a->tstamp.rx_filter == b->tstamp.rx_filter;
}

static int by_location(const void *a, const void *b) {
    uint32_t x = ((const RxnfcRule *)a)->fs.location, y = ((const RxnfcRule *)b)->fs.location;
    return x < y ? -1 : x > y;
}

static int rules_get(const Dev *d, RxnfcState *s) {
    struct ethtool_rxnfc cnt = {.cmd = ETHTOOL_GRXCLSRLCNT};
    _cleanup_free_ struct ethtool_rxnfc *all = NULL;
    uint32_t n;
    int r;

    r = eth_ioctl(d, &cnt);
    if (unsupported(r))
        return 0;
    if (r < 0)
        return r;
    s->have_rules = true;
    n = cnt.rule_cnt;
    if (n > RXNFC_RULES_MAX)
        return -E2BIG;
    if (n == 0)
        return 0;
    all = calloc(1, sizeof(*all) + n * sizeof(uint32_t));
    s->rules = calloc(n, sizeof(*s->rules));
    if (!all || !s->rules)
        return -ENOMEM;
    all->cmd = ETHTOOL_GRXCLSRLALL;
    all->rule_cnt = n;
    r = eth_ioctl(d, all);
    if (r < 0)
        return r;
    n = all->rule_cnt < n ? all->rule_cnt : n;
    for (uint32_t i = 0; i < n; i++) {
        struct ethtool_rxnfc one = {.cmd = ETHTOOL_GRXCLSRULE};
        one.fs.location = all->rule_locs[i];
        r = eth_ioctl(d, &one);
        if (r == -ENOENT)
            continue; /* deleted meanwhile */
        if (r < 0)
            return r;
        s->rules[s->n_rules].fs = one.fs;
        s->rules[s->n_rules].rss_context = one.fs.flow_type & FLOW_RSS ? one.rss_context : 0;
        s->n_rules++;
    }
    qsort(s->rules, s->n_rules, sizeof(*s->rules), by_location);
    return 0;
}

static void hash_get(const Dev *d, RxnfcState *s) {
    for (size_t i = 0; i < RXNFC_FLOW_TYPES; i++) {
        struct ethtool_rxnfc h = {.cmd = ETHTOOL_GRXFH, .flow_type = flow_types[i].type};
        if (eth_ioctl(d, &h) < 0)
            continue; /* a flow type the driver does not hash, or no RSS */
        s->hash_have |= 1u << i;
        s->hash[i] = h.data;
    }
}

/* The default context's table, key and function: sizes first, then them. */
static int rss_get(const Dev *d, RxnfcState *s) {
    struct ethtool_rxfh head = {.cmd = ETHTOOL_GRSSH};
    _cleanup_free_ struct ethtool_rxfh *all = NULL;
    int r;

    r = eth_ioctl(d, &head);
    if (unsupported(r))
        return 0;
    if (r < 0)
        return r;
    if (head.indir_size > RXNFC_INDIR_MAX || head.key_size > RXNFC_KEY_MAX)
        return -E2BIG;
    all = calloc(1, sizeof(*all) + head.indir_size * 4 + head.key_size);
    if (!all)
        return -ENOMEM;
    all->cmd = ETHTOOL_GRSSH;
    all->indir_size = head.indir_size;
    all->key_size = head.key_size;
    r = eth_ioctl(d, all);
    if (r < 0)
        return r;
    s->rss_indir = calloc(all->indir_size + 1, 4);
    s->rss_key = calloc(all->key_size + 1, 1);
    if (!s->rss_indir || !s->rss_key)
        return -ENOMEM;
    s->have_rss = true;
    s->rss_hfunc = all->hfunc;
    s->rss_indir_n = all->indir_size;
    s->rss_key_n = all->key_size;
    memcpy(s->rss_indir, all->rss_config, all->indir_size * 4);
    memcpy(s->rss_key, (uint8_t *)all->rss_config + all->indir_size * 4, all->key_size);
    return 0;
}

static bool rss_same(const RxnfcState *a, const RxnfcState *b) {
    return a->have_rss == b->have_rss && a->rss_hfunc == b->rss_hfunc &&
           a->rss_indir_n == b->rss_indir_n && a->rss_key_n == b->rss_key_n &&
           !memcmp(a->rss_indir, b->rss_indir, a->rss_indir_n * 4) &&
           !memcmp(a->rss_key, b->rss_key, a->rss_key_n);
}

/* The table, key and function of want set in one request. */
static int rss_set(const Dev *d, const RxnfcState *want) {
    _cleanup_free_ struct ethtool_rxfh *all =
        calloc(1, sizeof(*all) + want->rss_indir_n * 4 + want->rss_key_n);

    if (!all)
        return -ENOMEM;
    all->cmd = ETHTOOL_SRSSH;
    all->indir_size = want->rss_indir_n;
    all->key_size = want->rss_key_n;
    all->hfunc = want->rss_hfunc;
    memcpy(all->rss_config, want->rss_indir, want->rss_indir_n * 4);
    memcpy((uint8_t *)all->rss_config + want->rss_indir_n * 4, want->rss_key, want->rss_key_n);
    return eth_ioctl(d, all);
}

static int get(const Dev *d, RxnfcState *ret) {
    RxnfcState s = {0};
    int r = rules_get(d, &s);

    if (r >= 0)
        r = rss_get(d, &s);
    if (r >= 0)
        r = tstamp_get(d, &s);
    if (r < 0) {
        rxnfc_done(&s);
        return r;
    }
    hash_get(d, &s);
    *ret = s;
    return 0;
}

int rxnfc_get(const char *ifname, int ifindex, RxnfcState *ret) {
    Dev d;
    int r = dev_open(ifname, ifindex, &d);

    if (r < 0)
        return r;
    r = get(&d, ret);
    close(d.fd);
    return r;
}

int rxnfc_rss_contexts(const char *ifname, int ifindex) {
    struct ethtool_rxfh head = {.cmd = ETHTOOL_GRSSH, .rss_context = 1};
    Dev d;
    int r = dev_open(ifname, ifindex, &d);

    if (r < 0)
        return r;
    r = eth_ioctl(&d, &head);
    close(d.fd);
    /* a driver without contexts refuses any but 0; one with them answers
     * for context 1, or says it does not exist */
    return !unsupported(r);
}

static const RxnfcRule *rule_at(const RxnfcState *s, uint32_t location) {
    for (size_t i = 0; i < s->n_rules; i++)
        if (s->rules[i].fs.location == location)
            return &s->rules[i];
    return NULL;
}

static bool rule_same(const RxnfcRule *a, const RxnfcRule *b) {
    return !memcmp(&a->fs, &b->fs, sizeof(a->fs)) && a->rss_context == b->rss_context;
}

static int rule_del(const Dev *d, uint32_t location) {
    struct ethtool_rxnfc del = {.cmd = ETHTOOL_SRXCLSRLDEL};

    del.fs.location = location;
    return eth_ioctl(d, &del);
}

static int rule_ins(const Dev *d, const RxnfcRule *rule) {
    struct ethtool_rxnfc ins = {.cmd = ETHTOOL_SRXCLSRLINS};

    ins.fs = rule->fs;
    ins.rss_context = rule->rss_context;
    return eth_ioctl(d, &ins);
}

#define SEP (k ? ", " : "")
#define SAY(...)                                                                                   \
    do {                                                                                           \
        int m_ = k < n_what ? snprintf(what + k, n_what - k, __VA_ARGS__) : 0;                     \
        k += m_ > 0 ? (size_t)m_ : 1;                                                              \
    } while (0)

/* What differs between want and now, into what; how much was written. */
static size_t differences(const RxnfcState *want, const RxnfcState *now, char *what,
                          size_t n_what) {
    size_t k = 0;

    for (size_t i = 0; i < now->n_rules; i++)
        if (!rule_at(want, now->rules[i].fs.location))
            SAY("%sn-tuple rule %u (not there at ADD)", SEP, now->rules[i].fs.location);
    for (size_t i = 0; i < want->n_rules; i++) {
        const RxnfcRule *r = rule_at(now, want->rules[i].fs.location);
        if (!r)
            SAY("%sn-tuple rule %u missing", SEP, want->rules[i].fs.location);
        else if (!rule_same(r, &want->rules[i]))
            SAY("%sn-tuple rule %u changed", SEP, want->rules[i].fs.location);
    }
    for (size_t i = 0; i < RXNFC_FLOW_TYPES; i++)
        if ((want->hash_have & (1u << i)) &&
            (!(now->hash_have & (1u << i)) || now->hash[i] != want->hash[i]))
            SAY("%s%s hash fields %#llx (was %#llx)", SEP, flow_types[i].name,
                (unsigned long long)now->hash[i], (unsigned long long)want->hash[i]);
    if (want->have_rss && !rss_same(want, now))
        SAY("%sRSS table, key or function", SEP);
    if (want->have_tstamp && !tstamp_same(want, now))
        SAY("%shardware timestamping tx %d rx filter %d (was %d, %d)", SEP, now->tstamp.tx_type,
            now->tstamp.rx_filter, want->tstamp.tx_type, want->tstamp.rx_filter);
    return k;
}

int rxnfc_restore(const char *ifname, int ifindex, const RxnfcState *want, char *what,
                  size_t n_what) {
    RxnfcState now = {0};
    size_t k = 0;
    Dev d;
    int r;

    what[0] = 0;
    r = dev_open(ifname, ifindex, &d);
    if (r < 0)
        return r;
    r = get(&d, &now);
    for (size_t i = 0; r >= 0 && i < now.n_rules; i++) {
        const RxnfcRule *was = rule_at(want, now.rules[i].fs.location);
        if (was && rule_same(was, &now.rules[i]))
            continue;
        int e = rule_del(&d, now.rules[i].fs.location);
        if (e < 0)
            SAY("%sn-tuple rule %u not deleted: %s", SEP, now.rules[i].fs.location, strerror(-e));
    }
    for (size_t i = 0; r >= 0 && i < want->n_rules; i++) {
        const RxnfcRule *is = rule_at(&now, want->rules[i].fs.location);
        if (is && rule_same(is, &want->rules[i]))
            continue;
        int e = rule_ins(&d, &want->rules[i]);
        if (e < 0)
            SAY("%sn-tuple rule %u not put back: %s", SEP, want->rules[i].fs.location,
                strerror(-e));
    }
    for (size_t i = 0; r >= 0 && i < RXNFC_FLOW_TYPES; i++) {
        if (!(want->hash_have & (1u << i)) || now.hash[i] == want->hash[i])
            continue;
        struct ethtool_rxnfc h = {.cmd = ETHTOOL_SRXFH, .flow_type = flow_types[i].type};
        h.data = want->hash[i];
        int e = eth_ioctl(&d, &h);
        if (e < 0)
            SAY("%s%s hash fields not set back: %s", SEP, flow_types[i].name, strerror(-e));
    }
    if (r >= 0 && want->have_rss && !rss_same(want, &now)) {
        int e = rss_set(&d, want);
        if (e < 0)
            SAY("%sRSS table, key and function not set back: %s", SEP, strerror(-e));
    }
    if (r >= 0 && want->have_tstamp && !tstamp_same(want, &now)) {
        struct hwtstamp_config c = want->tstamp;
        int e = tstamp_ioctl(&d, SIOCSHWTSTAMP, &c);
        if (e < 0)
            SAY("%shardware timestamping not set back: %s", SEP, strerror(-e));
    }
    rxnfc_done(&now);
    if (r >= 0 && k == 0) {
        r = get(&d, &now);
        if (r >= 0)
            k = differences(want, &now, what, n_what);
        rxnfc_done(&now);
    }
    close(d.fd);
    if (r < 0)
        return r;
    return k ? -EIO : 0;
}

#undef SAY
#undef SEP

int rxnfc_to_json(const RxnfcState *s, json_t **ret) {
    json_t *o = json_object(), *rules = json_array(), *hash = json_object();
    int r = o && rules && hash ? 0 : -ENOMEM;

    for (size_t i = 0; r >= 0 && i < s->n_rules; i++) {
        char hex[2 * sizeof(struct ethtool_rx_flow_spec) + 1];
        const unsigned char *b = (const unsigned char *)&s->rules[i].fs;
        for (size_t j = 0; j < sizeof(struct ethtool_rx_flow_spec); j++)
            snprintf(hex + 2 * j, 3, "%02x", b[j]);
        if (json_array_append_new(rules,
                                  json_pack("{s:I, s:I, s:s}", "location",
                                            (json_int_t)s->rules[i].fs.location, "rssContext",
                                            (json_int_t)s->rules[i].rss_context, "spec", hex)) < 0)
            r = -ENOMEM;
    }
    for (size_t i = 0; r >= 0 && i < RXNFC_FLOW_TYPES; i++)
        if ((s->hash_have & (1u << i)) &&
            json_object_set_new(hash, flow_types[i].name, json_integer((json_int_t)s->hash[i])) < 0)
            r = -ENOMEM;
    if (r >= 0 && s->have_rules && json_object_set(o, "rules", rules) < 0)
        r = -ENOMEM;
    if (r >= 0 && json_object_set(o, "flowHash", hash) < 0)
        r = -ENOMEM;
    if (r >= 0 && s->have_tstamp &&
        json_object_set_new(o, "hwTstamp",
                            json_pack("{s:i, s:i, s:i}", "flags", s->tstamp.flags, "txType",
                                      s->tstamp.tx_type, "rxFilter", s->tstamp.rx_filter)) < 0)
        r = -ENOMEM;
    if (r >= 0 && s->have_rss) {
        json_t *indir = json_array();
        char *key = malloc(2 * s->rss_key_n + 1);
        for (uint32_t i = 0; indir && i < s->rss_indir_n; i++)
            if (json_array_append_new(indir, json_integer(s->rss_indir[i])) < 0)
                r = -ENOMEM;
        for (uint32_t i = 0; key && i < s->rss_key_n; i++)
            snprintf(key + 2 * i, 3, "%02x", s->rss_key[i]);
        if (key)
            key[2 * s->rss_key_n] = 0;
        if (!indir || !key || r < 0 ||
            json_object_set_new(o, "rss",
                                json_pack("{s:i, s:O, s:s}", "hfunc", (int)s->rss_hfunc, "indir",
                                          indir, "key", key)) < 0)
            r = -ENOMEM;
        json_decref(indir);
        free(key);
    }
    json_decref(rules);
    json_decref(hash);
    if (r < 0) {
        json_decref(o);
        return r;
    }
    *ret = o;
    return 0;
}

static int hex_byte(const char *p) {
    unsigned v;
    char two[3] = {p[0], p[1], 0};

    if (!p[0] || !p[1] || strspn(two, "0123456789abcdef") != 2 || sscanf(two, "%2x", &v) != 1)
        return -1;
    return (int)v;
}

static int rule_from_json(json_t *j, RxnfcRule *rule) {
    json_t *loc = json_object_get(j, "location"), *ctx = json_object_get(j, "rssContext");
    const char *hex = json_string_value(json_object_get(j, "spec"));
    unsigned char *b = (unsigned char *)&rule->fs;

    if (!json_is_object(j) || json_object_size(j) != 3 || !json_is_integer(loc) ||
        !json_is_integer(ctx) || !hex || strlen(hex) != 2 * sizeof(rule->fs) ||
        json_integer_value(loc) < 0 || json_integer_value(loc) > UINT32_MAX ||
        json_integer_value(ctx) < 0 || json_integer_value(ctx) > UINT32_MAX)
        return -EBADMSG;
    for (size_t i = 0; i < sizeof(rule->fs); i++) {
        int v = hex_byte(hex + 2 * i);
        if (v < 0)
            return -EBADMSG;
        b[i] = (unsigned char)v;
    }
    if (rule->fs.location != (uint32_t)json_integer_value(loc))
        return -EBADMSG;
    rule->rss_context = (uint32_t)json_integer_value(ctx);
    return 0;
}

static int rss_from_json(json_t *j, RxnfcState *s) {
    json_t *hfunc = json_object_get(j, "hfunc"), *indir = json_object_get(j, "indir"), *v;
    const char *key = json_string_value(json_object_get(j, "key"));
    size_t i;

    if (!json_is_object(j) || json_object_size(j) != 3 || !json_is_integer(hfunc) ||
        json_integer_value(hfunc) < 0 || json_integer_value(hfunc) > UINT8_MAX ||
        !json_is_array(indir) || json_array_size(indir) > RXNFC_INDIR_MAX || !key ||
        strlen(key) % 2 || strlen(key) / 2 > RXNFC_KEY_MAX)
        return -EBADMSG;
    s->rss_indir_n = (uint32_t)json_array_size(indir);
    s->rss_key_n = (uint32_t)(strlen(key) / 2);
    s->rss_indir = calloc(s->rss_indir_n + 1, 4);
    s->rss_key = calloc(s->rss_key_n + 1, 1);
    if (!s->rss_indir || !s->rss_key)
        return -ENOMEM;
    json_array_foreach(indir, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
            return -EBADMSG;
        s->rss_indir[i] = (uint32_t)json_integer_value(v);
    }
    for (i = 0; i < s->rss_key_n; i++) {
        int b = hex_byte(key + 2 * i);
        if (b < 0)
            return -EBADMSG;
        s->rss_key[i] = (uint8_t)b;
    }
    s->rss_hfunc = (uint8_t)json_integer_value(hfunc);
    s->have_rss = true;
    return 0;
}

int rxnfc_from_json(const json_t *j, RxnfcState *ret) {
    json_t *rules = json_object_get(j, "rules"), *hash = json_object_get(j, "flowHash"), *v;
    json_t *rss = json_object_get(j, "rss"), *ts = json_object_get(j, "hwTstamp");
    RxnfcState s = {0};
    const char *key;
    size_t i;
    int r = 0;

    if (!json_is_object(j) || !json_is_object(hash) ||
        json_object_size(j) != (size_t)(1 + (rules != NULL) + (rss != NULL) + (ts != NULL)) ||
        (rules && !json_is_array(rules)) || (rules && json_array_size(rules) > RXNFC_RULES_MAX))
        return -EBADMSG;
    if (ts) {
        json_t *f = json_object_get(ts, "flags"), *t = json_object_get(ts, "txType"),
               *x = json_object_get(ts, "rxFilter");
        if (!json_is_object(ts) || json_object_size(ts) != 3 || !json_is_integer(f) ||
            !json_is_integer(t) || !json_is_integer(x) || json_integer_value(f) < 0 ||
            json_integer_value(f) > INT32_MAX || json_integer_value(t) < 0 ||
            json_integer_value(t) > INT32_MAX || json_integer_value(x) < 0 ||
            json_integer_value(x) > INT32_MAX)
            return -EBADMSG;
        s.have_tstamp = true;
        s.tstamp.flags = (int)json_integer_value(f);
        s.tstamp.tx_type = (int)json_integer_value(t);
        s.tstamp.rx_filter = (int)json_integer_value(x);
    }
    if (rss) {
        r = rss_from_json(rss, &s);
        if (r < 0) {
            rxnfc_done(&s);
            return r;
        }
    }
    s.have_rules = rules != NULL;
    if (rules && json_array_size(rules)) {
        s.rules = calloc(json_array_size(rules), sizeof(*s.rules));
        if (!s.rules)
            return -ENOMEM;
    }
    json_array_foreach(rules, i, v) {
        r = rule_from_json(v, &s.rules[i]);
        if (r < 0)
            break;
        s.n_rules++;
    }
    json_object_foreach(hash, key, v) {
        size_t t = 0;
        while (t < RXNFC_FLOW_TYPES && !streq(flow_types[t].name, key))
            t++;
        if (r < 0 || t == RXNFC_FLOW_TYPES || !json_is_integer(v) || json_integer_value(v) < 0) {
            r = -EBADMSG;
            break;
        }
        s.hash_have |= 1u << t;
        s.hash[t] = (uint64_t)json_integer_value(v);
    }
    if (r < 0) {
        rxnfc_done(&s);
        return r;
    }
    if (s.n_rules)
        qsort(s.rules, s.n_rules, sizeof(*s.rules), by_location);
    for (i = 1; i < s.n_rules; i++)
        if (s.rules[i].fs.location == s.rules[i - 1].fs.location) {
            rxnfc_done(&s); /* one location, two rules */
            return -EBADMSG;
        }
    *ret = s;
    return 0;
}
