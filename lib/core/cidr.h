/* SPDX-License-Identifier: Apache-2.0 */
/* IPv4/IPv6 prefixes in text form: parse, network, host route. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct Cidr {
    int family; /* AF_INET or AF_INET6 */
    union {
        struct in_addr v4;
        struct in6_addr v6;
        unsigned char bytes[16];
    } addr;
    unsigned prefix;
} Cidr;

/* "10.0.0.2/24" (prefix required unless allow_bare, then /32 or /128). */
int cidr_parse(const char *s, bool allow_bare, Cidr *ret);
/* The address without prefix: "10.0.0.2". */
int cidr_format_addr(const Cidr *c, char *buf, size_t n);
/* "10.0.0.0/24" for "10.0.0.2/24". */
int cidr_format_network(const Cidr *c, char *buf, size_t n);
/* "10.0.0.2/32" for "10.0.0.2/24". */
int cidr_format_host(const Cidr *c, char *buf, size_t n);
