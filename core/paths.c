/* paths.c: shipped-data look-up (see paths.h). */
#define _POSIX_C_SOURCE 200809L
#include "paths.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#ifndef OC_SOURCE_DIR
#define OC_SOURCE_DIR "."
#endif
#ifndef OC_INSTALL_DATA_DIR
#define OC_INSTALL_DATA_DIR "/usr/local/share/ocsim"
#endif

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int nth_root(int i, const char **root)
{
    switch (i) {
    case 0: *root = getenv("OCSIM_DATA_DIR"); return 1;
    case 1: *root = OC_SOURCE_DIR; return 1;
    case 2: *root = OC_INSTALL_DATA_DIR; return 1;
    default: return 0;
    }
}

static int is_path(const char *name)
{
    size_t n = strlen(name);
    return strchr(name, '/') || (n >= 5 && strcmp(name + n - 5, ".json") == 0);
}

int oc_data_path(const char *kind, const char *name, char *out, size_t n,
                 struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    struct stat sb;
    if (!name || !*name)
        return oc_fail(st, "empty %s name", kind);
    if (is_path(name)) {
        if (stat(name, &sb) != 0)
            return oc_fail(st, "%s: %s", oc_quote(q, sizeof q, name),
                           errno == ENOENT ? "no such file" : strerror(errno));
        if (S_ISDIR(sb.st_mode))
            return oc_fail(st, "%s: is a directory, not a .json file",
                           oc_quote(q, sizeof q, name));
        if (!S_ISREG(sb.st_mode))
            return oc_fail(st, "%s: not a regular file", oc_quote(q, sizeof q, name));
        snprintf(out, n, "%s", name);
        return 0;
    }
    const char *root;
    for (int i = 0; nth_root(i, &root); i++) {
        if (!root || !*root)
            continue;
        int len = snprintf(out, n, "%s/%s/%s.json", root, kind, name);
        if (len > 0 && (size_t)len < n && is_file(out))
            return 0;
    }
    char names[1024];
    oc_data_list(kind, names, sizeof names);
    const char *one = strcmp(kind, "models") == 0       ? "model"
                      : strcmp(kind, "topologies") == 0 ? "topology"
                                                        : kind;
    return oc_fail(st, "unknown %s '%s' (shipped: %s; or give a path to a .json file)",
                   one, oc_quote(q, sizeof q, name), names[0] ? names : "none found");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void oc_data_list(const char *kind, char *buf, size_t n)
{
    buf[0] = '\0';
    const char *root;
    for (int i = 0; nth_root(i, &root); i++) {
        if (!root || !*root)
            continue;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, kind);
        DIR *d = opendir(dir);
        if (!d)
            continue;
        char *names[256];
        int k = 0;
        struct dirent *e;
        while ((e = readdir(d)) && k < 256) {
            size_t len = strlen(e->d_name);
            if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
                names[k++] = strndup(e->d_name, len - 5);
        }
        closedir(d);
        qsort(names, (size_t)k, sizeof names[0], cmp_str);
        size_t used = 0;
        for (int j = 0; j < k; j++) {
            if (used < n)
                used += (size_t)snprintf(buf + used, n - used, "%s%s",
                                         j ? ", " : "", names[j]);
            free(names[j]);
        }
        if (k)
            return;
    }
}

int oc_mkdir_p(const char *dir, struct oc_status *st)
{
    char buf[4096], q[OC_QUOTE_MAX];
    if (!dir || !*dir)
        return oc_fail(st, "empty output folder name");
    if (strlen(dir) > OC_DIR_MAX_BYTES)
        return oc_fail(st, "output folder name too long (%zu bytes; at most %d, so that "
                           "the files' names fit after it)", strlen(dir), OC_DIR_MAX_BYTES);
    strcpy(buf, dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return oc_fail(st, "%s: cannot create folder: %s", oc_quote(q, sizeof q, buf),
                           strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return oc_fail(st, "%s: cannot create folder: %s", oc_quote(q, sizeof q, buf),
                       strerror(errno));
    struct stat sb;
    if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return oc_fail(st, "%s: exists and is not a folder", oc_quote(q, sizeof q, buf));
    return 0;
}
