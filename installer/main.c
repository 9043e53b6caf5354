/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railgate-cni-install: the DaemonSet's init container on a node.
 *
 *   render        the node config out of the mounted ConfigMap (key = node name, else "default")
 *   install       the CNI binary (and its libraries) into the host's CNI bin dir, railgate
 *                 chained at the end of the host's primary network config list
 *   uninstall     railgate out of every conflist, and with --remove-bin the binary and libraries,
 *                 with --state-dir the state (refused while an attachment is recorded)
 *   check-config  validate node config files as the device plugin and the CNI load them
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "install.h"

#ifndef RAILGATE_CNI_DEFAULT_SRC
#define RAILGATE_CNI_DEFAULT_SRC "/usr/local/lib/cni/railgate"
#endif

#define PROG "railgate-cni-install"

static const char usage[] =
    "usage:\n"
    "  " PROG " render --dir DIR [--node NAME] --out FILE\n"
    "      write DIR/NAME (else DIR/default) to FILE once it passes the node config validation;\n"
    "      NAME defaults to $NODE_NAME\n"
    "  " PROG " install --bin-dir DIR [--src FILE] [--name NAME] [--lib-src DIR --lib-dir DIR]\n"
    "      [--conf-dir DIR | --conflist FILE] [--convert] [--wait SECONDS]\n"
    "      copy the CNI binary (default " RAILGATE_CNI_DEFAULT_SRC ") to DIR/NAME (default\n"
    "      railgate), mode 0755; with --lib-src, the libraries it runs with into --lib-dir;\n"
    "      then chain {\"type\": \"railgate\"} at the end of the primary config of --conf-dir\n"
    "      (the first *.conf, *.conflist, *.json by name) or of --conflist; a single-plugin\n"
    "      .conf is turned into a .conflist only with --convert; --wait polls up to SECONDS\n"
    "      for a config to appear in --conf-dir\n"
    "  " PROG " uninstall [--conf-dir DIR | --conflist FILE] [--bin-dir DIR [--name NAME]]\n"
    "      [--lib-dir DIR] [--remove-bin] [--state-dir DIR]\n"
    "      remove railgate from every *.conflist of --conf-dir (or from --conflist); with\n"
    "      --remove-bin also DIR/NAME and the --lib-dir that install filled; with\n"
    "      --state-dir the node's railgate state and the dir, refused (nothing removed\n"
    "      there) while a record of this boot says a pod holds NICs\n"
    "  " PROG " check-config FILE...\n"
    "      validate node config files\n";

typedef struct Args {
    const char *dir, *node, *out;
    const char *bin_dir, *src, *name, *lib_src, *lib_dir, *conf_dir, *conflist, *state_dir;
    bool convert, remove_bin;
    long wait_s;
} Args;

static int fail(const RgError *err) {
    fprintf(stderr, PROG ": error: %s\n", err->msg[0] ? err->msg : "failed");
    return 1;
}

static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...) {
    va_list ap;

    fprintf(stderr, PROG ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

static int do_render(const Args *a) {
    _cleanup_free_ char *key = NULL;
    RgError err = {0};
    const char *node = a->node ? a->node : getenv("NODE_NAME");
    bool changed;

    if (!a->dir || !a->out)
        return usage_error("render needs %s", "--dir and --out");
    if (!node || !node[0])
        return usage_error("render needs %s", "--node or $NODE_NAME");
    if (install_render(a->dir, node, a->out, &changed, &key, &err) < 0)
        return fail(&err);
    printf(PROG ": %s: node config from key \"%s\" of %s%s\n", a->out, key, a->dir,
           changed ? "" : " (unchanged)");
    return 0;
}

/* Poll for a network config in conf_dir, once a second, up to wait_s seconds. */
static int find_primary(const Args *a, char **ret, RgError *err) {
    for (long waited = 0;; waited++) {
        int r = install_primary_config(a->conf_dir, ret, err);
        if (r != -ENOENT || waited >= a->wait_s)
            return r;
        if (waited == 0)
            printf(PROG ": %s: no network config yet, waiting up to %lds\n", a->conf_dir,
                   a->wait_s);
        fflush(stdout);
        nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
    }
}

static int do_install(const Args *a) {
    _cleanup_free_ char *primary = NULL, *holder = NULL;
    RgError err = {0};
    const char *conf;
    unsigned n = 0;
    bool changed;

    if (!a->bin_dir)
        return usage_error("install needs %s", "--bin-dir");
    if (!a->lib_src != !a->lib_dir)
        return usage_error("install: %s go together", "--lib-src and --lib-dir");
    if (a->conf_dir && a->conflist)
        return usage_error("install: %s", "--conf-dir or --conflist, not both");
    /* libraries first, then the binary that needs them, then the config that names it */
    if (a->lib_src) {
        if (install_copy_dir(a->lib_src, a->lib_dir, 0755, &n, &err) < 0)
            return fail(&err);
        printf(PROG ": %s: %u of the CNI binary's libraries written\n", a->lib_dir, n);
    }
    if (install_copy_file(a->src, a->bin_dir, a->name, 0755, &changed, &err) < 0)
        return fail(&err);
    printf(PROG ": %s/%s: %s\n", a->bin_dir, a->name,
           changed ? "installed from the image, mode 0755" : "unchanged");
    if (!a->conf_dir && !a->conflist) {
        printf(PROG ": no --conf-dir or --conflist: network config left alone\n");
        return 0;
    }
    conf = a->conflist;
    if (!conf) {
        if (find_primary(a, &primary, &err) < 0)
            return fail(&err);
        conf = primary;
    }
    if (install_conflist_add(conf, a->convert, &changed, &holder, &err) < 0)
        return fail(&err);
    if (!changed)
        printf(PROG ": %s: railgate already chained (unchanged)\n", holder);
    else if (!streq(holder, conf))
        printf(PROG ": %s: converted from %s, railgate chained last\n", holder, conf);
    else
        printf(PROG ": %s: railgate chained last\n", holder);
    return 0;
}

/* The binary, then its libraries: after the config, so that no pod is set up
 * with a binary about to go. */
static int uninstall_bin(const Args *a) {
    _cleanup_free_ char *bin = NULL;
    RgError err = {0};
    bool changed;

    if (a->bin_dir) {
        if (asprintf(&bin, "%s/%s", a->bin_dir, a->name) < 0)
            return fail(&(RgError){.msg = "out of memory"});
        if (install_remove_file(bin, &changed, &err) < 0)
            return fail(&err);
        printf(PROG ": %s: %s\n", bin, changed ? "removed" : "not there (unchanged)");
    }
    if (a->lib_dir) {
        if (install_remove_dir(a->lib_dir, &changed, &err) < 0)
            return fail(&err);
        printf(PROG ": %s: %s\n", a->lib_dir, changed ? "removed" : "not there (unchanged)");
    }
    return 0;
}

static int uninstall_state(const Args *a) {
    _cleanup_free_ char *kept = NULL;
    RgError err = {0};
    bool changed;

    if (install_remove_state(a->state_dir, &changed, &kept, &err) < 0)
        return fail(&err);
    if (kept)
        printf(PROG ": %s: railgate's state removed; the dir stays, it holds %s, not railgate's\n",
               a->state_dir, kept);
    else
        printf(PROG ": %s: %s\n", a->state_dir,
               changed ? "railgate's state removed" : "not there (unchanged)");
    return 0;
}

static int do_uninstall(const Args *a) {
    RgError err = {0};
    unsigned n = 0;
    bool changed;
    int ret = 0;

    if (a->conf_dir && a->conflist)
        return usage_error("uninstall: %s", "--conf-dir or --conflist, not both");
    if (a->remove_bin && !a->bin_dir && !a->lib_dir)
        return usage_error("uninstall --remove-bin needs %s", "--bin-dir or --lib-dir");
    /* the config first: no pod may be set up with a binary about to go */
    if (a->conflist) {
        if (install_conflist_remove(a->conflist, &changed, &err) < 0)
            return fail(&err);
        printf(PROG ": %s: %s\n", a->conflist,
               changed ? "railgate removed" : "no railgate entry (unchanged)");
    } else if (a->conf_dir) {
        if (install_conflist_remove_dir(a->conf_dir, &n, &err) < 0)
            ret = fail(&err); /* go on: the other files were done */
        printf(PROG ": %s: railgate removed from %u conflist(s)\n", a->conf_dir, n);
    }
    if (a->remove_bin && uninstall_bin(a) != 0)
        return 1;
    /* last: a DEL that the config still started keeps its record until done */
    if (a->state_dir && uninstall_state(a) != 0)
        return 1;
    return ret;
}

static int do_check(int argc, char **argv) {
    int ret = 0;

    if (argc < 1)
        return usage_error("check-config needs %s", "at least one FILE");
    for (int i = 0; i < argc; i++) {
        RgError err = {0};
        if (install_check_config(argv[i], &err) < 0)
            ret = fail(&err);
        else
            printf("%s: ok\n", argv[i]);
    }
    return ret;
}

int main(int argc, char **argv) {
    enum {
        O_DIR = 256,
        O_NODE,
        O_OUT,
        O_BIN,
        O_SRC,
        O_NAME,
        O_LSRC,
        O_LDIR,
        O_CONFD,
        O_CONFL,
        O_CONVERT,
        O_RMBIN,
        O_WAIT,
        O_STATE
    };
    static const struct option opts[] = {
        {"dir", required_argument, NULL, O_DIR},
        {"node", required_argument, NULL, O_NODE},
        {"out", required_argument, NULL, O_OUT},
        {"bin-dir", required_argument, NULL, O_BIN},
        {"src", required_argument, NULL, O_SRC},
        {"name", required_argument, NULL, O_NAME},
        {"lib-src", required_argument, NULL, O_LSRC},
        {"lib-dir", required_argument, NULL, O_LDIR},
        {"conf-dir", required_argument, NULL, O_CONFD},
        {"conflist", required_argument, NULL, O_CONFL},
        {"convert", no_argument, NULL, O_CONVERT},
        {"remove-bin", no_argument, NULL, O_RMBIN},
        {"wait", required_argument, NULL, O_WAIT},
        {"state-dir", required_argument, NULL, O_STATE},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    Args a = {.src = RAILGATE_CNI_DEFAULT_SRC, .name = INSTALL_PLUGIN_TYPE};
    const char *cmd;
    char *end;
    int c;

    if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    cmd = argv[1];
    argv++, argc--;
    if (streq(cmd, "check-config"))
        return do_check(argc - 1, argv + 1);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_DIR:
            a.dir = optarg;
            break;
        case O_NODE:
            a.node = optarg;
            break;
        case O_OUT:
            a.out = optarg;
            break;
        case O_BIN:
            a.bin_dir = optarg;
            break;
        case O_SRC:
            a.src = optarg;
            break;
        case O_NAME:
            a.name = optarg;
            break;
        case O_LSRC:
            a.lib_src = optarg;
            break;
        case O_LDIR:
            a.lib_dir = optarg;
            break;
        case O_CONFD:
            a.conf_dir = optarg;
            break;
        case O_CONFL:
            a.conflist = optarg;
            break;
        case O_CONVERT:
            a.convert = true;
            break;
        case O_RMBIN:
            a.remove_bin = true;
            break;
        case O_STATE:
            a.state_dir = optarg;
            break;
        case O_WAIT:
            errno = 0;
            a.wait_s = strtol(optarg, &end, 10);
            if (errno || *end || a.wait_s < 0 || a.wait_s > 86400)
                return usage_error("--wait %s: seconds, 0 to 86400", optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument %s", argv[optind]);
    if (streq(cmd, "render"))
        return do_render(&a);
    if (streq(cmd, "install"))
        return do_install(&a);
    if (streq(cmd, "uninstall"))
        return do_uninstall(&a);
    return usage_error("unknown command %s", cmd);
}
