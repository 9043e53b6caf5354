/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the ethtool state: what each piece is made of, for the kernel side and the JSON side. */
#pragma once

#include <stdint.h>

#include "ethtool.h"

/* Attributes newer than the UAPI headers railgate builds with (Debian 12's, 6.1): the
 * kernel's numbers, which never change once released. */
#define ETHTOOL_A_RINGS_RX_PUSH_ 14               /* 6.4 */
#define ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN_ 15       /* 6.4 */
#define ETHTOOL_A_RINGS_HDS_THRESH_ 17            /* 6.13 */
#define ETHTOOL_A_COALESCE_TX_AGGR_MAX_BYTES_ 25  /* 6.3 */
#define ETHTOOL_A_COALESCE_TX_AGGR_MAX_FRAMES_ 26 /* 6.3 */
#define ETHTOOL_A_COALESCE_TX_AGGR_TIME_USECS_ 27 /* 6.3 */
#define ETHTOOL_MSG_RSS_GET_ 38                   /* 6.3: right after ETHTOOL_MSG_PSE_SET */
#define ETHTOOL_A_RSS_HFUNC_ 3
#define ETHTOOL_A_RSS_INDIR_ 4
#define ETHTOOL_A_RSS_HKEY_ 5
#define ETHTOOL_A_RSS_INPUT_XFRM_ 6  /* 6.8 */
#define ETHTOOL_MSG_PLCA_GET_CFG_ 39 /* 6.4 */
#define ETHTOOL_MSG_PLCA_SET_CFG_ 40
#define ETHTOOL_A_PLCA_ENABLED_ 3   /* u8 */
#define ETHTOOL_A_PLCA_NODE_CNT_ 5  /* u32 */
#define ETHTOOL_A_PLCA_NODE_ID_ 6   /* u32 */
#define ETHTOOL_A_PLCA_TO_TMR_ 7    /* u32 */
#define ETHTOOL_A_PLCA_BURST_CNT_ 8 /* u32 */
#define ETHTOOL_A_PLCA_BURST_TMR_ 9 /* u32 */
#define ETHTOOL_MSG_MM_GET_ 42      /* 6.4 */
#define ETHTOOL_MSG_MM_SET_ 43
#define ETHTOOL_A_MM_PMAC_ENABLED_ 2       /* u8 */
#define ETHTOOL_A_MM_TX_ENABLED_ 3         /* u8 */
#define ETHTOOL_A_MM_TX_MIN_FRAG_SIZE_ 5   /* u32 */
#define ETHTOOL_A_MM_VERIFY_ENABLED_ 7     /* u8 */
#define ETHTOOL_A_MM_VERIFY_TIME_ 9        /* u32 */
#define ETHTOOL_A_C33_PSE_ADMIN_CONTROL_ 6 /* 6.9, u32 */

typedef struct EthtoolAttr {
    uint8_t attr;     /* the netlink attribute, < ETHTOOL_ATTR_MAX */
    uint8_t width;    /* 1 (u8) or 4 (u32) */
    const char *name; /* its JSON key */
} EthtoolAttr;

typedef struct EthtoolPieceInfo {
    const char *name; /* JSON key */
    uint8_t get_cmd;  /* ETHTOOL_MSG_*_GET */
    uint8_t set_cmd;  /* ETHTOOL_MSG_*_SET; 0: none over netlink */
    const EthtoolAttr *attrs;
    size_t n_attrs;
    uint8_t bits_attr; /* the bitset's attribute in the SET request (and GET reply); 0: none */
    const char *bits_name;
    uint8_t blob_attr; /* 0: none */
    uint8_t blob_len;  /* its exact length, 0: any up to ETHTOOL_BLOB_MAX */
    const char *blob_name;
    uint8_t table_attr; /* 0: none */
    const char *table_name;
} EthtoolPieceInfo;

extern const EthtoolPieceInfo ethtool_piece_info[_ETHTOOL_PIECE_MAX];

/* Does attribute a of piece p differ between rec and now, as a setting? (Not a link's
 * negotiated or unknown speed, duplex or lanes.) */
bool ethtool_attr_differs(EthtoolPiece p, const EthtoolPart *rec, const EthtoolPart *now,
                          unsigned a);
/* The bit called name in b, or NULL. */
const EthtoolBit *ethtool_bit_find(const EthtoolBitset *b, const char *name);
/* Does bit (recorded) differ in now? For an exact set: does the set of bits on differ? */
bool ethtool_bit_differs(const EthtoolBitset *now, const EthtoolBit *bit);
bool ethtool_bits_differ(const EthtoolBitset *rec, const EthtoolBitset *now);
/* Does piece p differ between rec and now (both ETHTOOL_HAVE)? */
bool ethtool_part_differs(EthtoolPiece p, const EthtoolPart *rec, const EthtoolPart *now);
void ethtool_part_done(EthtoolPart *part);
/* Append a bit to b (ETHTOOL_BITS_MAX at most: -E2BIG). */
int ethtool_bits_add(EthtoolBitset *b, const char *name, bool on);
