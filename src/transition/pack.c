/* pack.c — boxes of a logical tensor inside one rank's local shard
 * (tx_exec.h): the local block of tensor t is the box slab_tensor_box(t)
 * stored row-major in its local shape; a sub-box's elements, taken in the
 * sub-box's own row-major order, fall into runs that are contiguous in the
 * local buffer. A run spans the innermost axes on which the sub-box covers
 * the whole local extent, plus the next axis out. */
#include "nereus/tx_exec.h"

/* floats per run of box (start, count) inside local box (hs, hc) */
static size_t box_run(const int hc[4], const int count[4]) {
    size_t r = (size_t)count[3];
    for (int a = 3; a > 0 && count[a] == hc[a]; a--) r *= (size_t)count[a - 1];
    return r;
}

/* local offset of element e (row-major in count) of box (start, count) */
static size_t box_offset(const int hs[4], const int hc[4], const int start[4], const int count[4], size_t e) {
    int x[4];
    for (int a = 3; a >= 0; a--) {
        x[a] = start[a] + (int)(e % (size_t)count[a]);
        e /= (size_t)count[a];
    }
    size_t off = 0, stride = 1;
    for (int a = 3; a >= 0; a--) {
        off += (size_t)(x[a] - hs[a]) * stride;
        stride *= (size_t)hc[a];
    }
    return off;
}

/* calls fn(local offset, host index, length) for each run piece of [e0, e0+n) */
#define FOR_RUNS(t, start, count, e0, n, BODY)                                    \
    do {                                                                        \
        int hs_[4], hc_[4];                                                     \
        slab_tensor_box((t), hs_, hc_);                                         \
        size_t R_ = box_run(hc_, (count)), e_ = (e0), end_ = (e0) + (n);        \
        while (e_ < end_) {                                                     \
            size_t q_ = e_ / R_, in_ = e_ - q_ * R_;                            \
            size_t len = R_ - in_ < end_ - e_ ? R_ - in_ : end_ - e_;           \
            size_t off = box_offset(hs_, hc_, (start), (count), q_ * R_) + in_; \
            size_t h = e_ - (e0);                                               \
            BODY;                                                               \
            e_ += len;                                                          \
        }                                                                       \
    } while (0)

void tx_box_pack(const Backend *be, const TensorInfo *t, const float *buf, const int start[4], const int count[4],
                 size_t e0, size_t n, float *host) {
    FOR_RUNS(t, start, count, e0, n, be->download(host + h, buf + off, len * sizeof(float)));
}

void tx_box_unpack(const Backend *be, const TensorInfo *t, float *buf, const int start[4], const int count[4],
                   size_t e0, size_t n, const float *host) {
    FOR_RUNS(t, start, count, e0, n, be->upload(buf + off, host + h, len * sizeof(float)));
}

size_t tx_box_contiguous(const TensorInfo *t, const int start[4], const int count[4], size_t e0, size_t n) {
    int hs[4], hc[4];
    slab_tensor_box(t, hs, hc);
    size_t R = box_run(hc, count), q = e0 / R;
    if (n == 0 || (e0 + n - 1) / R != q) return (size_t)-1;
    return box_offset(hs, hc, start, count, q * R) + (e0 - q * R);
}

size_t tx_box_runs(const TensorInfo *t, const int start[4], const int count[4], size_t e0, size_t n, size_t *offs,
                   size_t *lens, size_t max) {
    size_t k = 0;
    FOR_RUNS(t, start, count, e0, n, {
        (void)h;
        if (k < max) {
            offs[k] = off;
            lens[k] = len;
        }
        k++;
    });
    return k;
}
