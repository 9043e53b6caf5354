/* SPDX-License-Identifier: Apache-2.0 */
/* A NIC's n-tuple rules, RSS flow hash fields and RSS table, which only ethtool's ioctl sets. */
#pragma once

#include <jansson.h>
#include <linux/ethtool.h>
#include <linux/net_tstamp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * ethtool's netlink family has no request for these on the kernels railgate
 * runs on (6.1, 6.12: n-tuple rules never; flow hash fields from 6.17), so
 * they go through SIOCETHTOOL: ETHTOOL_GRXCLSRLCNT, _GRXCLSRLALL and
 * _GRXCLSRULE read the rules, _SRXCLSRLDEL and _SRXCLSRLINS put them back;
 * ETHTOOL_GRXFH and _SRXFH the fields each flow type hashes on, ETHTOOL_GRSSH
 * and _SRSSH the RSS indirection table, hash key and function (default RSS
 * context; netlink reads these from 6.2 but sets them only from 6.13);
 * SIOCGHWTSTAMP and SIOCSHWTSTAMP the hardware timestamping configuration
 * (netlink from 6.15). A
 * device whose driver has none of it (veth, dummy, macvlan, igbvf) keeps
 * nothing.
 */

#define RXNFC_RULES_MAX 1024
#define RXNFC_FLOW_TYPES 14
#define RXNFC_INDIR_MAX 4096 /* RSS indirection table entries */
#define RXNFC_KEY_MAX 256    /* RSS hash key bytes (40 or 52 on real NICs) */

typedef struct RxnfcRule {
    struct ethtool_rx_flow_spec fs;
    uint32_t rss_context; /* a FLOW_RSS rule's context */
} RxnfcRule;

typedef struct RxnfcState {
    bool have_rules; /* the driver answered ETHTOOL_GRXCLSRLCNT */
    size_t n_rules;
    RxnfcRule *rules;   /* by location */
    uint32_t hash_have; /* bit i: flow type i of the table in ethtool-rxnfc.c answered */
    uint64_t hash[RXNFC_FLOW_TYPES];
    bool have_rss; /* the driver answered ETHTOOL_GRSSH */
    uint8_t rss_hfunc;
    uint32_t rss_indir_n, rss_key_n;
    uint32_t *rss_indir;
    uint8_t *rss_key;
    bool have_tstamp; /* the driver answered SIOCGHWTSTAMP */
    struct hwtstamp_config tstamp;
} RxnfcState;

/* The state of ifname, which must be the link at ifindex in the caller's
 * namespace (-ENODEV otherwise); -E2BIG for more than RXNFC_RULES_MAX rules. */
int rxnfc_get(const char *ifname, int ifindex, RxnfcState *ret);
/* Rules not in want deleted, rules of want missing or changed inserted at
 * their location, flow hash fields that differ set; then read again: -EIO
 * and what is not as recorded in what ("n-tuple rule 3 ..., udp4 hash
 * fields 0xf0 (was 0xc0)") when anything differs or was refused. */
int rxnfc_restore(const char *ifname, int ifindex, const RxnfcState *want, char *what,
                  size_t n_what);
void rxnfc_done(RxnfcState *s);
/* Does the driver keep RSS contexts besides the default (it answers
 * ETHTOOL_GRSSH for context 1, or says that one does not exist)? 1 or 0.
 * Those are not kept: no request lists them on 6.1. */
int rxnfc_rss_contexts(const char *ifname, int ifindex);
/* Anything kept at all (rules supported or a flow hash field read)? */
bool rxnfc_any(const RxnfcState *s);

/* {"rules": [{"location": n, "rssContext": n, "spec": "<hex>"}...], "flowHash":
 * {"tcp4": n, ...}, "rss": {"hfunc": n, "indir": [n...], "key": "<hex>"},
 * "hwTstamp": {"flags": n, "txType": n, "rxFilter": n}}; a
 * rule's spec is struct ethtool_rx_flow_spec's bytes.
 * The parse refuses anything else (-EBADMSG, *ret untouched). */
int rxnfc_to_json(const RxnfcState *s, json_t **ret);
int rxnfc_from_json(const json_t *j, RxnfcState *ret);
