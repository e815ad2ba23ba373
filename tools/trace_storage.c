/* trace_storage.c — the damage to a trace that HDF5's checksums do not catch
 * (the trace format keeps a Fletcher-32 checksum on every chunk and on its
 * object headers): a chunk lost from a table's chunk index, a damaged global
 * heap collection under a table's strings, and a row's strings that are not
 * the ones written (strings_fnv). Each is refused with a message naming the
 * file, rather than read as other data or hung on.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nereus/util.h" /* nr_cksum_strs: the checksum of a row's strings */
#include "trace_tool.h"

/* A table's variable-length strings live in global heap collections (HDF5 file format: "GCOL", version 1,
 * 3 reserved bytes, the collection's size; then objects: index (2 bytes), reference count (2), reserved (4),
 * size, data padded to 8 bytes; index 0 is the free space, its size counting its own header). No checksum
 * covers a collection, and HDF5 1.10.8 reads one by walking its objects: a damaged one whose walk does not
 * advance (an object of size 0: 64 bytes zeroed inside it) hangs every reader in H5HG_read, h5dump and h5py
 * included. So the collections a table's rows point to are walked here first, from the file's bytes, as HDF5
 * walks them. */
typedef struct Heaps {
    int fd;
    off_t fsize;
    size_t sa, ss;      /* the file's address and length sizes */
    uint64_t addr;      /* the collection walked last (rows point to a few, in order) */
    int ok;             /* it walks to its end */
    uint64_t *size;     /* (65536) its objects' sizes by index; UINT64_MAX: none */
} Heaps;

static uint64_t le_get(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* walks the collection at addr into h (ok, size[]) */
static void heap_walk(Heaps *h, uint64_t addr) {
    size_t hdr = 8 + h->ss, ohdr = 8 + h->ss;
    unsigned char head[16], *c = NULL;
    h->addr = addr;
    h->ok = 0;
    for (size_t i = 0; i < 65536; i++) h->size[i] = UINT64_MAX;
    if (addr + hdr > (uint64_t)h->fsize || pread(h->fd, head, hdr, (off_t)addr) != (ssize_t)hdr) return;
    uint64_t size = le_get(head + 8, h->ss);
    if (memcmp(head, "GCOL", 4) != 0 || head[4] != 1 || size < hdr || addr + size > (uint64_t)h->fsize) return;
    if (!(c = malloc(size)) || pread(h->fd, c, size, (off_t)addr) != (ssize_t)size) return free(c);
    int ok = 1;
    for (uint64_t p = hdr; p < size && ok;) {
        if (p + ohdr > size) break; /* too little left for an object: free space without a header */
        uint64_t id = le_get(c + p, 2), osize = le_get(c + p + 8, h->ss);
        uint64_t need = id ? ohdr + ((osize + 7) & ~(uint64_t)7) : osize;
        if (osize > size || need < ohdr || p + need > size) ok = 0; /* would not advance, or runs past the end */
        else h->size[id] = osize;
        p += need;
    }
    free(c);
    h->ok = ok;
}

/* A row as stored: the (packed) members in offset order, a string as its length, its collection's address
 * and its index there (vsz bytes); the type HDF5 hands back holds a string as a pointer, so its offsets are not
 * the file's. Into off: the offsets of the (at most 16) strings in a stored row; returns the row's size. */
static size_t stored_row(hid_t ft, int nm, size_t vsz, size_t off[16], int *nvl) {
    int order[64];
    size_t esz = 0;
    *nvl = 0;
    for (int m = 0; m < nm && m < 64; m++) {
        int k = m;
        for (; k > 0 && H5Tget_member_offset(ft, (unsigned)order[k - 1]) > H5Tget_member_offset(ft, (unsigned)m); k--)
            order[k] = order[k - 1];
        order[k] = m;
    }
    for (int k = 0; k < nm && k < 64; k++) {
        hid_t mt = H5Tget_member_type(ft, (unsigned)order[k]);
        int vl = H5Tget_class(mt) == H5T_STRING && H5Tis_variable_str(mt) > 0;
        if (vl && *nvl < 16) off[(*nvl)++] = esz;
        esz += vl ? vsz : H5Tget_size(mt);
        H5Tclose(mt);
    }
    return esz;
}

/* 1 when every filter of the table is Fletcher-32 (Nereus's way: others are left to HDF5) */
static int only_fletcher32(hid_t dcpl) {
    for (int k = 0, nf = H5Pget_nfilters(dcpl); k < nf; k++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        if (H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, 0, NULL, NULL) != H5Z_FILTER_FLETCHER32) return 0;
    }
    return 1;
}

/* the strings of rows [0, rows) of a stored chunk: each in a collection that walks and an object there long enough */
static int chunk_strings_ok(Heaps *h, const unsigned char *buf, hsize_t rows, size_t esz, const size_t *off, int nvl) {
    for (hsize_t e = 0; e < rows; e++)
        for (int v = 0; v < nvl; v++) {
            const unsigned char *p = buf + e * esz + off[v];
            uint64_t len = le_get(p, 4), ha = le_get(p + 4, h->sa), idx = le_get(p + 4 + h->sa, 4);
            if (len == 0) continue; /* "": nothing to read there */
            if (ha != h->addr) heap_walk(h, ha);
            if (!h->ok || idx > 65535 || h->size[idx] == UINT64_MAX || h->size[idx] < len) return 0;
        }
    return 1;
}

/* Before HDF5 reads table d (n rows, HDF5's type ft): every chunk of its rows, looked up and read as stored, and
 * where it has strings, the heap collections they point to walked (above) with the object each points to there.
 * A chunk can be lost from a damaged chunk index (v1 B-tree nodes carry no checksum in this format), and H5Dread
 * then gives it back as fill values, rows of zeros, without an error; H5Dread_chunk fails. stored NULL: every
 * chunk must be there; else the rows may end in chunks never written (a trace that is not complete: its run
 * stopped between growing a table and flushing its chunk), and *stored is set to the rows before them. Tables
 * stored other than in chunks, or through a filter other than Fletcher-32, are left to HDF5. 0, or −1 with the
 * failure set. */
int trace_check_storage(const char *path, hid_t f, hid_t d, hid_t ft, hsize_t n, const char *tname, hsize_t *stored) {
    hid_t dcpl = H5Dget_create_plist(d), fcpl = H5Fget_create_plist(f);
    Heaps h = {.fd = -1};
    if (fcpl < 0 || H5Pget_sizes(fcpl, &h.sa, &h.ss) < 0 || h.sa > 8 || h.ss > 8 || h.sa < 2 || h.ss < 2) h.sa = 0;
    int nm = H5Tget_nmembers(ft), nvl = 0, rc = 0, missing = 0;
    size_t off[16], esz = stored_row(ft, nm, 4 + h.sa + 4, off, &nvl);
    hsize_t chunk = 0;
    int chunked = n && dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 1, &chunk) == 1 && chunk > 0;
    int heap = chunked && nvl && h.sa && nm <= 64 && only_fletcher32(dcpl);
    struct stat sb;
    if (heap && (!(h.size = malloc(65536 * sizeof *h.size)) || (h.fd = open(path, O_RDONLY)) < 0 || fstat(h.fd, &sb) != 0))
        heap = 0;
    h.fsize = heap ? sb.st_size : 0;
    h.addr = UINT64_MAX;
    unsigned char *buf = NULL;
    hsize_t first_missing = n; /* the first chunk the file does not hold (n: none) */
    for (hsize_t start = 0; chunked && !rc && !missing && start < n; start += chunk) {
        hsize_t size = 0;
        haddr_t addr = HADDR_UNDEF;
        unsigned mask = 0;
        if (H5Dget_chunk_info_by_coord(d, &start, &mask, &addr, &size) < 0 || size > ((hsize_t)1 << 30)) {
            missing = 1;
            break;
        }
        if (addr == HADDR_UNDEF) { /* never written */
            if (first_missing == n) first_missing = start;
            continue;
        }
        if (first_missing < n) { /* a chunk after one never written: not how a run stops */
            missing = 1;
            break;
        }
        unsigned char *raw = realloc(buf, size ? size : 1);
        buf = raw;
        if (!raw || size == 0 || H5Dread_chunk(d, H5P_DEFAULT, &start, &mask, raw) < 0) { /* as stored, before the filters */
            missing = 1;
            break;
        }
        if (heap && (size < chunk * esz || !chunk_strings_ok(&h, buf, n - start < chunk ? n - start : chunk, esz, off, nvl)))
            rc = -1;
    }
    free(buf);
    free(h.size);
    if (h.fd >= 0) close(h.fd);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fcpl >= 0) H5Pclose(fcpl);
    if (first_missing < n && stored && !missing && !rc) *stored = first_missing;
    else if (first_missing < n) missing = 1;
    if (missing)
        return trace_read_fail("%s: /%s: its chunk index does not list every chunk of its %llu rows: the file is corrupt",
                               path, tname, (unsigned long long)n);
    return rc ? trace_read_fail("%s: /%s: the global heap that holds its strings is damaged: the file is corrupt", path,
                                tname)
              : 0;
}

/* A table's strings against its strings_fnv column (src/io/trace.c row_fnv); a table without the column, or a
   row whose strings_fnv is 0 (appended by another writer), is not checked. 0, or −1 with the failure set. */
int trace_check_strings(const char *path, const Table *t) {
    const Col *ck = table_col(t, PLANS(strings_fnv));
    if (!ck || ck->cls != C_INT) return 0;
    const Col *sc[8]; /* the string columns, in column order */
    int n = 0;
    for (int c = 0; c < t->ncol && n < 8; c++)
        if (t->col[c].cls == C_STR) sc[n++] = &t->col[c];
    const char *s[8];
    for (size_t k = 0; k < t->n; k++) {
        if (ck->i[k] == 0) continue;
        for (int c = 0; c < n; c++) s[c] = sc[c]->s[k];
        int64_t v = (int64_t)nr_cksum_strs(s, n);
        if ((v ? v : 1) != ck->i[k])
            return trace_read_fail("%s: /%s row %zu: its strings do not match their checksum (strings_fnv): the file "
                                   "is corrupt", path, t->name, k);
    }
    return 0;
}
