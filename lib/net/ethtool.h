/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A NIC's ethtool state: what a pod with NET_ADMIN over the NIC's namespace can change
 * through ethtool, recorded before the NIC is lent and set back when it comes home.
 *
 * Read and written through ethtool's generic netlink family (netlink-ethtool.c, the only
 * file that includes libnl-genl); diffed, freed and kept as JSON in ethtool-state.c.
 * The state is made of pieces, each one ethtool GET/SET request pair. A piece the device
 * does not have (the kernel answers EOPNOTSUPP) is ETHTOOL_NONE, which is no error;
 * one the kernel cannot read over netlink is ETHTOOL_UNREADABLE, which the caller must
 * make visible (health, refusal): nothing can be compared or restored there. RSS (the
 * indirection table, key and hash function) is read-only: the kernels railgate runs on
 * (6.1, 6.12) have no RSS set request over netlink, and 6.1 has no RSS get either.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "macro.h"

typedef enum EthtoolPiece {
    ETHTOOL_FEATURES = 0, /* the wanted bits of the changeable features (ethtool -K) */
    ETHTOOL_CHANNELS,     /* ethtool -L */
    ETHTOOL_RINGS,        /* ethtool -G */
    ETHTOOL_COALESCE,     /* ethtool -C */
    ETHTOOL_PAUSE,        /* ethtool -A */
    ETHTOOL_PRIVFLAGS,    /* ethtool --set-priv-flags */
    ETHTOOL_EEE,          /* ethtool --set-eee */
    ETHTOOL_LINKMODES,    /* autoneg, speed, duplex, advertised (ethtool -s) */
    ETHTOOL_WOL,          /* ethtool -s wol, sopass */
    ETHTOOL_MSGLEVEL,     /* ethtool -s msglvl */
    ETHTOOL_RSS,          /* ethtool -x: read only, see above */
    ETHTOOL_FEC,          /* ethtool --set-fec */
    ETHTOOL_LINKINFO,     /* MDI-X control (ethtool -s mdix) */
    ETHTOOL_MODULE,       /* the transceiver module's power mode policy */
    ETHTOOL_MM,           /* MAC merge (802.3 clause 99, 6.4+) */
    ETHTOOL_PLCA,         /* PLCA (10BASE-T1S, 6.4+) */
    ETHTOOL_PSE,          /* power sourcing equipment: PoDL and clause 33 admin control */
    _ETHTOOL_PIECE_MAX,
} EthtoolPiece;
#define ETHTOOL_PIECES_ALL ((1u << _ETHTOOL_PIECE_MAX) - 1)

/* "features", "channels", ... (the JSON keys); NULL for no piece. */
const char *ethtool_piece_to_string(EthtoolPiece p);

typedef enum EthtoolHave {
    ETHTOOL_NONE = 0,   /* the device has no such setting */
    ETHTOOL_HAVE,       /* read: the value is in the part */
    ETHTOOL_UNREADABLE, /* the kernel has no netlink request to read it */
} EthtoolHave;

/* ETH_GSTRING_LEN: the kernel's names of bits (features, link modes, flags) */
#define ETHTOOL_NAME_MAX 32
typedef struct EthtoolBit {
    char name[ETHTOOL_NAME_MAX]; /* the kernel's (or driver's) name; "#<index>" if none */
    bool on;
} EthtoolBit;
/* Named bits. exact: the bits listed are the ones on, every other bit is off (a
 * message-level mask, private flags); else only the bits listed count, each on or off
 * (the changeable features, the advertised link modes among the supported ones). */
typedef struct EthtoolBitset {
    bool exact;
    size_t n;
    EthtoolBit *bits;
} EthtoolBitset;

/* A piece's numbers: v[a] holds netlink attribute a of its GET reply where has bit a is
 * set (ETHTOOL_A_CHANNELS_RX_COUNT, ...); only attributes its SET request takes. */
#define ETHTOOL_ATTR_MAX 32
typedef struct EthtoolPart {
    EthtoolHave have;
    uint64_t has;
    uint32_t v[ETHTOOL_ATTR_MAX];
    EthtoolBitset bits; /* features, private flags, msglevel, EEE/link modes, WoL */
    uint8_t *blob;      /* RSS hash key, WoL SecureOn password; blob_len 0: none */
    size_t blob_len;
    uint32_t *table; /* RSS indirection table */
    size_t table_len;
} EthtoolPart;

typedef struct EthtoolState {
    EthtoolPart part[_ETHTOOL_PIECE_MAX];
} EthtoolState;

/* Frees what the parts hold and zeroes s (every piece ETHTOOL_NONE); NULL-safe. */
void ethtool_state_done(EthtoolState *s);

/* Limits on what a peer (the kernel, a record on disk) may hand us. */
#define ETHTOOL_BITS_MAX 1024      /* bits of one bitset (link modes: about 120 today) */
#define ETHTOOL_RSS_TABLE_MAX 4096 /* RSS indirection table entries */
#define ETHTOOL_BLOB_MAX 256       /* RSS key bytes (40 or 52 on real NICs) */

/* ---- the kernel (netlink-ethtool.c) ---- */

typedef struct EthtoolConn EthtoolConn;
/* A connection to the "ethtool" generic netlink family in the namespace open at
 * netns_fd (< 0: the calling thread's), its socket made there with netns_run().
 * -EOPNOTSUPP: the kernel has no ethtool netlink family (CONFIG_ETHTOOL_NETLINK). */
int ethtool_open(int netns_fd, EthtoolConn **ret);
void ethtool_close(EthtoolConn *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EthtoolConn *, ethtool_close);

/* Every piece of ifindex into *ret (a piece the device lacks: ETHTOOL_NONE). -ENODEV:
 * no such link; another -errno names nothing: err says which piece failed. */
int ethtool_state_get(EthtoolConn *c, int ifindex, EthtoolState *ret, RgError *err);
/* The same of n links, every piece of every one asked in one batch (as few
 * sendmsg calls as the socket's buffers allow): link i's answer in ret[i],
 * ret_r[i] (0 or -errno) and, on a failure, errs[i] with the same words as
 * ethtool_state_get()'s. Returns the first link's failure, or 0: each
 * ret[i] with ret_r[i] == 0 is the caller's to free. */
int ethtool_state_get_many(EthtoolConn *c, const int *ifindex, size_t n, EthtoolState *ret,
                           int *ret_r, RgError *errs);

/* ETHTOOL_RSS differs, or a piece was recorded that the device no longer has (or
 * the kernel no longer reads): nothing can set it back. Distinct from any errno a
 * SET request returns, so that the caller can refuse or flag the NIC. */
#define ETHTOOL_CANNOT_RESTORE (-ENOTRECOVERABLE)

/*
 * Set every piece of ifindex that differs from recorded back to it: one SET request
 * per piece, carrying only the attributes and bits that differ, then read it all again
 * and compare. Every piece is tried. 0: the device is as recorded. Else err names
 * each piece that failed, with the kernel's extended-ack text, and the result is the
 * first SET refusal's -errno; -EIO if a piece was accepted but still differs; or
 * ETHTOOL_CANNOT_RESTORE when what remains is only pieces nothing can set: RSS, a
 * piece recorded that the device no longer has, or one recorded that this kernel
 * cannot read. A piece recorded ETHTOOL_UNREADABLE is not compared (the caller flags
 * it, see ethtool_state_unreadable()).
 */
int ethtool_state_restore(EthtoolConn *c, int ifindex, const EthtoolState *recorded, RgError *err);

/* ---- comparing and keeping (ethtool-state.c) ---- */

/* The pieces (1u << EthtoolPiece) in which a and b differ: presence, or a value that
 * a SET request can change. Unreadable in either: not compared. */
unsigned ethtool_state_diff(const EthtoolState *a, const EthtoolState *b);
/* The pieces of s that are ETHTOOL_UNREADABLE. */
unsigned ethtool_state_unreadable(const EthtoolState *s);
/* "features, rss" for a mask of pieces, into buf; "" for 0. */
const char *ethtool_pieces_to_string(unsigned pieces, char *buf, size_t n);

/* s as a JSON object (every piece a key: an object, "none" or "unreadable"). */
int ethtool_state_to_json(const EthtoolState *s, json_t **ret);
/* Strict: every piece present, no unknown key, each value in range; -EBADMSG with
 * the JSON path of the mistake in err; *ret untouched on failure. */
int ethtool_state_from_json(json_t *j, EthtoolState *ret, RgError *err);
