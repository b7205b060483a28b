/* The native SKI trainer: one epoch of mini-batch Adam for every member of an ensemble of
 * small networks, each member's whole epoch run in cache (see native.py for the Python side
 * and the network plan it passes; ensemble.py has the PyTorch trainer it is tested against).
 *
 * A network is a list of ops over a state S[W][BP]: W state rows (units), each a row of BP
 * floats, one per sample of the mini-batch (BP: the batch size rounded up to 32; the lanes
 * past the batch carry finite values and zero gradients):
 *   INPUT  out = act(base + x @ Wt)        x: the sample's features, zeros skipped
 *   DENSE  out = act(base + S[in] @ Wt)    S[in] a contiguous range of rows (nin may be 0)
 *   COPY   out[o] = S[src[o]]              (no parameters)
 * base: a bias (parameters) or a range of S (pre-activations computed by an earlier op);
 * act: identity, ReLU or the logistic sigmoid.  A dense op's weights are output-major,
 * W[nout][nin]; the input op's input-major, Wx[D][nout] (a feature's weights: one row).
 *
 * Why batch-major: the layers of these networks are narrow (2 to 64 units, often not a
 * multiple of 16) and the batch is 32, so the forward pass and the input gradients run
 * vectors over the samples (two 16-float blocks), never over padded units. A weight
 * gradient sums over the samples: the op's inputs are transposed to sample-major rows and
 * the sum runs vectors over 16 inputs (padding only the input count, never stored). The
 * sparse input op works per sample, vectors over its outputs (padded to a multiple of 16:
 * structural zeros), with 16 x 16 transposes to and from the state.
 * The loss is the mean over the mini-batch of the softmax cross-entropy of the K logits,
 * plus (KILL) pen_w * sum_k max(0, r_k - p_k) for per-sample rule truths r.
 *
 * Determinism: compiled with -ffp-contract=off and without fast-math, every number is computed
 * by the same sequence of IEEE operations whatever the vector width (lane-wise operations, FMAs
 * written out, sums in fixed trees), and exp is our own polynomial, not libm's: the same numbers
 * on any machine.  Members never share a sum, so a member's numbers do not depend on which
 * others are in the ensemble.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_MXCSR 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#define LANES 16
#define CHUNK 32 /* samples per register block: two vectors */

enum { K_INPUT = 0, K_DENSE = 1, K_COPY = 2 };
enum { A_ID = 0, A_RELU = 1, A_SIGMOID = 2 };
enum { B_NONE = 0, B_PARAM = 1, B_STATE = 2 };

typedef struct {
    int32_t kind, act, in0, nin, out0, nout, base_kind, base_off, w_off, mask_off, idx_off;
} op_t;

/* -- vectors --------------------------------------------------------------------------------
 * The kernel computes in blocks of LANES = 16 floats (v16).  A block is NH registers of the
 * machine's own width HW (AVX-512: one of 16; AVX/AVX2: two of 8; SSE2, ARM64 NEON and the
 * rest: four of 4): GCC spills vectors wider than the machine's registers to the stack (an
 * AVX2 build of 64-byte vectors ran 15x slower).  Every operation is lane-wise, computing the
 * same IEEE operation in each lane whatever HW is; the few that mix lanes (hsum16,
 * transpose16) are written out per HW with the same result. */
#if defined(__AVX512F__)
#define HW 16
#elif defined(__AVX__)
#define HW 8
#else
#define HW 4
#endif
#define NH (LANES / HW)

typedef float vf __attribute__((vector_size(4 * HW)));
typedef int32_t vi __attribute__((vector_size(4 * HW)));
typedef struct { vf h[NH]; } v16;

#define EACH for (int i_ = 0; i_ < NH; i_++)
#define H(x) (x).h[i_]

static inline vf ldh(const float *p) { vf r; memcpy(&r, p, sizeof r); return r; }
static inline void sth(float *p, vf x) { memcpy(p, &x, sizeof x); }
static inline vf splath(float a) { return (vf){0} + a; }
static inline vf selh(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }

/* c + a * b with a single rounding (fused multiply-add), so the same numbers whether the CPU
 * has an FMA instruction (AVX-512, AVX2 + FMA, ARM64) or not (libm's fmaf, exact but slow) */
static inline vf fmah(vf a, vf b, vf c)
{
#if defined(__AVX512F__)
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__) && HW == 8
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#elif defined(__aarch64__)
    return (vf)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b);
#else
    vf r;
    for (int k = 0; k < HW; k++) r[k] = fmaf(a[k], b[k], c[k]);
    return r;
#endif
}

/* IEEE square root (correctly rounded: the same on every machine) */
static inline vf sqrth(vf a)
{
#if defined(__AVX512F__)
    return (vf)_mm512_sqrt_ps((__m512)a);
#elif defined(__AVX__)
    return (vf)_mm256_sqrt_ps((__m256)a);
#elif defined(__SSE2__)
    return (vf)_mm_sqrt_ps((__m128)a);
#elif defined(__aarch64__)
    return (vf)vsqrtq_f32((float32x4_t)a);
#else
    vf r;
    for (int k = 0; k < HW; k++) r[k] = sqrtf(a[k]);
    return r;
#endif
}

/* 1 / d for d >= eps > 0 (Adam's denominator): an integer first guess and three Newton
 * steps in FMAs, within 2 ulp; the divider is busy with Adam's square roots */
static inline vf reciph(vf d)
{
    vf r = (vf)((vi){0} + 0x7EF311C3 - (vi)d);
    for (int i = 0; i < 3; i++) r = fmah(r, fmah(-d, r, splath(1.0f)), r);
    return r;
}

/* exp(x) for x clamped to [-87, 88]: Cody-Waite reduction and Cephes' degree-6 polynomial
 * in FMAs (relative error ~2e-7), branch-free. */
static inline vf exph(vf x)
{
    x = selh(x < -87.0f, splath(-87.0f), x);
    x = selh(x > 88.0f, splath(88.0f), x);
    const vf n = fmah(x, splath(1.44269504088896341f), splath(12582912.0f)) - 12582912.0f;
    vf r = fmah(n, splath(-0.693359375f), x);              /* round to nearest above */
    r = fmah(n, splath(2.12194440e-4f), r);
    vf p = fmah(splath(1.9875691500e-4f), r, splath(1.3981999507e-3f));
    p = fmah(p, r, splath(8.3334519073e-3f));
    p = fmah(p, r, splath(4.1665795894e-2f));
    p = fmah(p, r, splath(1.6666665459e-1f));
    p = fmah(p, r, splath(5.0000001201e-1f));
    p = fmah(p * r, r, r) + 1.0f;
    const vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
    return p * (vf)bits;
}

static inline vf activateh(int act, vf z)
{
    if (act == A_RELU) return selh(z > 0.0f, z, splath(0.0f));
    if (act == A_SIGMOID) return 1.0f / (1.0f + exph(-z));
    return z;
}

/* dL/d(pre-activation) from dL/d(output) and the output */
static inline vf dactivateh(int act, vf h, vf d)
{
    if (act == A_RELU) return selh(h > 0.0f, d, splath(0.0f));
    if (act == A_SIGMOID) return d * (h * (1.0f - h));
    return d;
}

/* the same on blocks of 16 */
static inline v16 ld(const float *p) { v16 r; EACH H(r) = ldh(p + i_ * HW); return r; }
static inline void st(float *p, v16 x) { EACH sth(p + i_ * HW, H(x)); }
static inline v16 splat(float a) { v16 r; EACH H(r) = splath(a); return r; }
static inline v16 add(v16 a, v16 b) { EACH H(a) += H(b); return a; }
static inline v16 mul(v16 a, v16 b) { EACH H(a) *= H(b); return a; }
static inline v16 fma_v(v16 a, v16 b, v16 c) { EACH H(c) = fmah(H(a), H(b), H(c)); return c; }
static inline v16 mad(float a, v16 b, v16 c) { return fma_v(splat(a), b, c); }
static inline v16 activate(int act, v16 z) { EACH H(z) = activateh(act, H(z)); return z; }
static inline float lane(v16 x, int k) { return x.h[k / HW][k % HW]; }

/* -- lane-mixing operations ---------------------------------------------------------------- */

#define SH(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)

/* In-place transpose of an HW x HW block of registers (pure data movement: no arithmetic,
 * no rounding) */
static inline void transpose_hw(vf *r)
{
#if HW == 16
    for (int i = 0; i < 16; i++) {
        if (i & 8) continue;
        vf a = r[i], b = r[i + 8];
        r[i] = SH(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
        r[i + 8] = SH(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    }
    for (int i = 0; i < 16; i++) {
        if (i & 4) continue;
        vf a = r[i], b = r[i + 4];
        r[i] = SH(a, b, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
        r[i + 4] = SH(a, b, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    }
    for (int i = 0; i < 16; i++) {
        if (i & 2) continue;
        vf a = r[i], b = r[i + 2];
        r[i] = SH(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
        r[i + 2] = SH(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
    for (int i = 0; i < 16; i += 2) {
        vf a = r[i], b = r[i + 1];
        r[i] = SH(a, b, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
        r[i + 1] = SH(a, b, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    }
#elif HW == 8
    for (int i = 0; i < 4; i++) {
        vf a = r[i], b = r[i + 4];
        r[i] = SH(a, b, 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = SH(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
    }
    for (int i = 0; i < 8; i++) {
        if (i & 2) continue;
        vf a = r[i], b = r[i + 2];
        r[i] = SH(a, b, 0, 1, 8, 9, 4, 5, 12, 13);
        r[i + 2] = SH(a, b, 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int i = 0; i < 8; i += 2) {
        vf a = r[i], b = r[i + 1];
        r[i] = SH(a, b, 0, 8, 2, 10, 4, 12, 6, 14);
        r[i + 1] = SH(a, b, 1, 9, 3, 11, 5, 13, 7, 15);
    }
#else
    for (int i = 0; i < 2; i++) {
        vf a = r[i], b = r[i + 2];
        r[i] = SH(a, b, 0, 1, 4, 5);
        r[i + 2] = SH(a, b, 2, 3, 6, 7);
    }
    for (int i = 0; i < 4; i += 2) {
        vf a = r[i], b = r[i + 1];
        r[i] = SH(a, b, 0, 4, 2, 6);
        r[i + 1] = SH(a, b, 1, 5, 3, 7);
    }
#endif
}

/* In-place transpose of a 16 x 16 block held as 16 rows: each HW x HW sub-block transposed
 * in registers and moved to its mirror position */
static inline void transpose16(v16 *r)
{
#if HW == 16
    vf t[16];
    for (int k = 0; k < 16; k++) t[k] = r[k].h[0];
    transpose_hw(t);
    for (int k = 0; k < 16; k++) r[k].h[0] = t[k];
#else
    v16 out[16];
    for (int bi = 0; bi < NH; bi++)
        for (int bj = 0; bj < NH; bj++) {
            vf t[HW];
            for (int k = 0; k < HW; k++) t[k] = r[bi * HW + k].h[bj];
            transpose_hw(t);
            for (int k = 0; k < HW; k++) out[bj * HW + k].h[bi] = t[k];
        }
    for (int k = 0; k < 16; k++) r[k] = out[k];
#endif
}

/* Lane k of the result: the sum of the 16 lanes of x[k], in the same tree for every k:
 * (l, l+8) pairs, then (l, l+4), (l, l+2), (l, l+1). */
static inline v16 hsum16(const v16 *x)
{
#if HW == 16
    vf y[8], z[4], u[2];
    for (int i = 0; i < 8; i++)
        y[i] = SH(x[2 * i].h[0], x[2 * i + 1].h[0], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20,
                  21, 22, 23)
             + SH(x[2 * i].h[0], x[2 * i + 1].h[0], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26,
                  27, 28, 29, 30, 31);
    for (int i = 0; i < 4; i++)
        z[i] = SH(y[2 * i], y[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27)
             + SH(y[2 * i], y[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30,
                  31);
    for (int i = 0; i < 2; i++)
        u[i] = SH(z[2 * i], z[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29)
             + SH(z[2 * i], z[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30,
                  31);
    v16 s;
    s.h[0] = SH(u[0], u[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
           + SH(u[0], u[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return s;
#else
    /* transposed, row l holds lane l of every x[k]: the same tree over rows */
    v16 t[16];
    for (int k = 0; k < 16; k++) t[k] = x[k];
    transpose16(t);
    for (int l = 0; l < 8; l++) t[l] = add(t[l], t[l + 8]);
    for (int l = 0; l < 4; l++) t[l] = add(t[l], t[l + 4]);
    for (int l = 0; l < 2; l++) t[l] = add(t[l], t[l + 2]);
    return add(t[0], t[1]);
#endif
}

/* dst[c][j] = src[j][c] for a rows x cols block (both multiples of 16; row strides in
 * floats) */
static void transpose(const float *src, int64_t ss, float *dst, int64_t ds, int64_t rows,
                      int64_t cols)
{
    v16 r[16];
    for (int64_t i = 0; i < rows; i += LANES)
        for (int64_t c = 0; c < cols; c += LANES) {
            for (int k = 0; k < 16; k++) r[k] = ld(src + (i + k) * ss + c);
            transpose16(r);
            for (int k = 0; k < 16; k++) st(dst + (c + k) * ds + i, r[k]);
        }
}

/* -- the mini-batch ------------------------------------------------------------------------ */

/* The state S[W][BP] and its gradient dS, the scratch Z[BP][zw] (sample-major rows of the
 * input op) and T (a dense op's inputs, sample-major), and each sample's non-zero features (nnz[j] of them, columns nzi[j][.], values
 * nzv[j][.]; none for the lanes past the batch). */
typedef struct {
    float *S, *dS, *Z, *T;
    int64_t W, BP, zw, nb;
    const int64_t *nnz;
    const int32_t **nzi;
    const float **nzv;
} batch_t;

static inline float *row(float *S, const batch_t *bt, int64_t r) { return S + r * bt->BP; }

/* -- forward ------------------------------------------------------------------------------- */

static void input_forward(const op_t *op, const float *p, const float *mask, batch_t *bt)
{
    const int64_t nout = op->nout;
    const float *w = p + op->w_off, *b = p + op->base_off, *mk = mask + op->mask_off;
    for (int64_t j = 0; j < bt->BP; j++) {
        float *z = bt->Z + j * bt->zw;
        const int32_t *nzi = bt->nzi[j];
        const float *nzv = bt->nzv[j];
        const int64_t nnz = bt->nnz[j];
        /* a dependent add waits ~4 cycles for the previous one: 2 blocks of 16 outputs,
         * each summed in two halves (even and odd non-zeros), added at the end */
        for (int64_t ob = 0; ob < nout; ob += 2 * LANES) {
            const int two = ob + LANES < nout;
            v16 e0 = ld(b + ob), e1 = two ? ld(b + ob + LANES) : splat(0.0f);
            v16 o0 = splat(0.0f), o1 = splat(0.0f);
            int64_t q = 0;
            for (; q + 1 < nnz; q += 2) {
                const float a = nzv[q], c = nzv[q + 1];
                const float *wa = w + (int64_t)nzi[q] * nout + ob;
                const float *wc = w + (int64_t)nzi[q + 1] * nout + ob;
                e0 = mad(a, ld(wa), e0);
                o0 = mad(c, ld(wc), o0);
                if (two) {
                    e1 = mad(a, ld(wa + LANES), e1);
                    o1 = mad(c, ld(wc + LANES), o1);
                }
            }
            if (q < nnz) {
                const float *wa = w + (int64_t)nzi[q] * nout + ob;
                e0 = mad(nzv[q], ld(wa), e0);
                if (two) e1 = mad(nzv[q], ld(wa + LANES), e1);
            }
            st(z + ob, mul(activate(op->act, add(e0, o0)), ld(mk + ob)));
            if (two) st(z + ob + LANES, mul(activate(op->act, add(e1, o1)), ld(mk + ob + LANES)));
        }
    }
    transpose(bt->Z, bt->zw, row(bt->S, bt, op->out0), bt->BP, bt->BP, nout);
}

/* out rows o..o+3, samples c..c+31: 8 independent accumulators (4 units x 2 vectors) */
static void dense_forward(const op_t *op, const float *p, batch_t *bt)
{
    const int64_t nout = op->nout, nin = op->nin, BP = bt->BP;
    const float *w = p + op->w_off;
    for (int64_t c = 0; c < BP; c += CHUNK) {
        int64_t o = 0;
        for (; o < nout; o += 4) {
            const int64_t no = nout - o < 4 ? nout - o : 4;
            v16 a[4][2];
            for (int k = 0; k < 4; k++)
                for (int v = 0; v < 2; v++) {
                    if (k >= no) a[k][v] = splat(0.0f);
                    else if (op->base_kind == B_PARAM) a[k][v] = splat(p[op->base_off + o + k]);
                    else if (op->base_kind == B_STATE)
                        a[k][v] = ld(row(bt->S, bt, op->base_off + o + k) + c + v * LANES);
                    else a[k][v] = splat(0.0f);
                }
            const float *w0 = w + o * nin, *w1 = w0 + (no > 1) * nin, *w2 = w0 + (no > 2) * 2 * nin,
                        *w3 = w0 + (no > 3) * 3 * nin;     /* (a missing unit repeats unit o) */
            for (int64_t r = 0; r < nin; r++) {
                const float *x = row(bt->S, bt, op->in0 + r) + c;
                const v16 x0 = ld(x), x1 = ld(x + LANES);
                a[0][0] = mad(w0[r], x0, a[0][0]); a[0][1] = mad(w0[r], x1, a[0][1]);
                a[1][0] = mad(w1[r], x0, a[1][0]); a[1][1] = mad(w1[r], x1, a[1][1]);
                a[2][0] = mad(w2[r], x0, a[2][0]); a[2][1] = mad(w2[r], x1, a[2][1]);
                a[3][0] = mad(w3[r], x0, a[3][0]); a[3][1] = mad(w3[r], x1, a[3][1]);
            }
            for (int k = 0; k < no; k++)
                for (int v = 0; v < 2; v++)
                    st(row(bt->S, bt, op->out0 + o + k) + c + v * LANES, activate(op->act, a[k][v]));
        }
    }
}

static void op_forward(const op_t *op, const float *p, const float *mask, const int32_t *cidx,
                       batch_t *bt)
{
    if (op->kind == K_COPY) {
        for (int64_t o = 0; o < op->nout; o++) {
            const int32_t c = cidx[op->idx_off + o];
            float *dst = row(bt->S, bt, op->out0 + o);
            if (c >= 0) memcpy(dst, row(bt->S, bt, c), sizeof(float) * (size_t)bt->BP);
            else memset(dst, 0, sizeof(float) * (size_t)bt->BP);
        }
    } else if (op->kind == K_INPUT) {
        input_forward(op, p, mask, bt);
    } else {
        dense_forward(op, p, bt);
    }
}

/* -- backward ------------------------------------------------------------------------------ */

/* 16 dot products over the samples: lane l of dot k's accumulator sums a[k][l] * b[k][l],
 * then samples l + 16, l + 32, ... (one FMA each, in that order); hsum16's tree adds the 16
 * lanes. out[k] += the dots (m of them: the rest of a and b is not read). Unrolled, so the
 * 16 accumulators live in registers. */
static inline void dots16(const float *const *a, const float *const *b, int m, int64_t BP,
                          float *out)
{
    v16 acc[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) {
        acc[k] = splat(0.0f);
        if (k < m)
            for (int64_t v = 0; v < BP; v += LANES) acc[k] = fma_v(ld(a[k] + v), ld(b[k] + v), acc[k]);
    }
    const v16 s = hsum16(acc);
    if (m == 16) st(out, add(ld(out), s));
    else
        for (int k = 0; k < m; k++) out[k] += lane(s, k);
}

/* the gradient of a dense op's weights, G[w + o * nin + r] = sum over the samples j (in
 * order) of g_o[j] * in_r[j]: the inputs transposed to sample-major rows T[j][.], then
 * vectors over 16 inputs, 4 units x 2 vectors of independent accumulators */
static void dense_weight_grad(const op_t *op, float *G, batch_t *bt)
{
    const int64_t nin = op->nin, nout = op->nout, np = (nin + LANES - 1) / LANES * LANES;
    const int64_t nb = bt->nb;
    /* (rows in0 + nin .. in0 + np: whatever follows in S, or its zero slack; never stored) */
    transpose(row(bt->S, bt, op->in0), bt->BP, bt->T, np, np, bt->BP);
    float *gw = G + op->w_off;
    for (int64_t o = 0; o < nout; o += 4) {
        const int64_t no = nout - o < 4 ? nout - o : 4;
        const float *g0 = row(bt->dS, bt, op->out0 + o), *g1 = g0 + (no > 1) * bt->BP,
                    *g2 = g0 + (no > 2) * 2 * bt->BP, *g3 = g0 + (no > 3) * 3 * bt->BP;
        for (int64_t rb = 0; rb < np; rb += 2 * LANES) {
            const int two = rb + LANES < np;
            v16 a[4][2];
            for (int k = 0; k < 4; k++) a[k][0] = a[k][1] = splat(0.0f);
            for (int64_t j = 0; j < nb; j++) {
                const float *t = bt->T + j * np + rb;
                const v16 t0 = ld(t), t1 = two ? ld(t + LANES) : splat(0.0f);
                a[0][0] = mad(g0[j], t0, a[0][0]); a[0][1] = mad(g0[j], t1, a[0][1]);
                a[1][0] = mad(g1[j], t0, a[1][0]); a[1][1] = mad(g1[j], t1, a[1][1]);
                a[2][0] = mad(g2[j], t0, a[2][0]); a[2][1] = mad(g2[j], t1, a[2][1]);
                a[3][0] = mad(g3[j], t0, a[3][0]); a[3][1] = mad(g3[j], t1, a[3][1]);
            }
            for (int64_t k = 0; k < no; k++)
                for (int64_t v = 0; v < 1 + two; v++) {
                    const int64_t r0 = rb + v * LANES, cnt = nin - r0 < LANES ? nin - r0 : LANES;
                    float *dst = gw + (o + k) * nin + r0;
                    if (cnt == LANES) st(dst, add(ld(dst), a[k][v]));
                    else {
                        float tmp[LANES];
                        st(tmp, a[k][v]);
                        for (int64_t i = 0; i < cnt; i++) dst[i] += tmp[i];
                    }
                }
        }
    }
}

/* the gradient of a dense op's bias: sums over the samples, 16 units at a time */
static void dense_bias_grad(const op_t *op, float *G, const float *ones, batch_t *bt)
{
    const float *pa[16], *pb[16];
    for (int64_t o0 = 0; o0 < op->nout; o0 += 16) {
        const int m = op->nout - o0 < 16 ? (int)(op->nout - o0) : 16;
        for (int k = 0; k < m; k++) {
            pa[k] = ones;
            pb[k] = row(bt->dS, bt, op->out0 + o0 + k);
        }
        dots16(pa, pb, m, bt->BP, G + op->base_off + o0);
    }
}

/* dL/d(inputs) += g @ W^T: in rows r..r+3, samples c..c+31, 8 accumulators */
static void dense_input_grad(const op_t *op, const float *p, batch_t *bt)
{
    const int64_t nout = op->nout, nin = op->nin, BP = bt->BP;
    const float *w = p + op->w_off;
    for (int64_t c = 0; c < BP; c += CHUNK)
        for (int64_t r = 0; r < nin; r += 4) {
            const int64_t nr = nin - r < 4 ? nin - r : 4;
            /* (a missing input repeats input r) */
            const int64_t r1 = r + (nr > 1), r2 = r + (nr > 2) * 2, r3 = r + (nr > 3) * 3;
            v16 a[4][2];
            for (int k = 0; k < 4; k++) a[k][0] = a[k][1] = splat(0.0f);
            for (int64_t o = 0; o < nout; o++) {
                const float *g = row(bt->dS, bt, op->out0 + o) + c, *wo = w + o * nin;
                const v16 g0 = ld(g), g1 = ld(g + LANES);
                a[0][0] = mad(wo[r], g0, a[0][0]); a[0][1] = mad(wo[r], g1, a[0][1]);
                a[1][0] = mad(wo[r1], g0, a[1][0]); a[1][1] = mad(wo[r1], g1, a[1][1]);
                a[2][0] = mad(wo[r2], g0, a[2][0]); a[2][1] = mad(wo[r2], g1, a[2][1]);
                a[3][0] = mad(wo[r3], g0, a[3][0]); a[3][1] = mad(wo[r3], g1, a[3][1]);
            }
            for (int k = 0; k < nr; k++) {
                float *d = row(bt->dS, bt, op->in0 + r + k) + c;
                st(d, add(ld(d), a[k][0]));
                st(d + LANES, add(ld(d + LANES), a[k][1]));
            }
        }
}

/* the input op: its outputs' gradients back to sample-major rows, then the sparse weight
 * gradients (samples in order); its bias gradient is dense_bias_grad's */
static void input_backward(const op_t *op, float *G, batch_t *bt)
{
    const int64_t nout = op->nout;
    transpose(row(bt->dS, bt, op->out0), bt->BP, bt->Z, bt->zw, nout, bt->BP);
    float *gw = G + op->w_off;
    for (int64_t j = 0; j < bt->nb; j++) {
        const float *g = bt->Z + j * bt->zw;
        const int32_t *nzi = bt->nzi[j];
        const float *nzv = bt->nzv[j];
        for (int64_t q = 0; q < bt->nnz[j]; q++) {
            const float a = nzv[q];
            float *gr = gw + (int64_t)nzi[q] * nout;
            for (int64_t ob = 0; ob < nout; ob += LANES) st(gr + ob, mad(a, ld(g + ob), ld(gr + ob)));
        }
    }
}

/* backward of one op over the mini-batch: dS[out] holds dL/d(output) on entry and dL/d(pre-
 * activation) on exit; gradients of parameters are added to G, of inputs to dS. */
static void op_backward(const op_t *op, const float *p, const int32_t *cidx, float *G,
                        const float *ones, batch_t *bt)
{
    const int64_t nout = op->nout, BP = bt->BP;
    if (op->kind == K_COPY) {
        for (int64_t o = 0; o < nout; o++) {
            const int32_t c = cidx[op->idx_off + o];
            if (c < 0) continue;
            float *d = row(bt->dS, bt, c);
            const float *g = row(bt->dS, bt, op->out0 + o);
            for (int64_t v = 0; v < BP; v += HW) sth(d + v, ldh(d + v) + ldh(g + v));
        }
        return;
    }
    for (int64_t o = 0; o < nout; o++) {
        float *g = row(bt->dS, bt, op->out0 + o);
        const float *h = row(bt->S, bt, op->out0 + o);
        for (int64_t v = 0; v < BP; v += HW) sth(g + v, dactivateh(op->act, ldh(h + v), ldh(g + v)));
        if (op->base_kind == B_STATE) {
            float *gs = row(bt->dS, bt, op->base_off + o);
            for (int64_t v = 0; v < BP; v += HW) sth(gs + v, ldh(gs + v) + ldh(g + v));
        }
    }
    if (op->base_kind == B_PARAM) dense_bias_grad(op, G, ones, bt);
    if (op->kind == K_INPUT) {
        input_backward(op, G, bt);
        return;
    }
    if (op->nin) {
        dense_weight_grad(op, G, bt);
        dense_input_grad(op, p, bt);
    }
}

/* softmax cross-entropy (+ KILL penalty) gradient of the logits rows z[K][BP], HW samples at
 * a time; lab[j] the label (-1 past the batch: gradient 0), tr[K][BP] the rule truths or
 * NULL */
static void loss_grad(const float *z, int64_t K, const int32_t *lab, const float *tr,
                      float pen_w, float inv_n, int64_t BP, float *dz)
{
    for (int64_t v = 0; v < BP; v += HW) {
        vi y, live;
        memcpy(&y, lab + v, sizeof y);
        live = y >= 0;
        vf mx = ldh(z + v);
        for (int64_t k = 1; k < K; k++) {
            const vf zk = ldh(z + k * BP + v);
            mx = selh(zk > mx, zk, mx);
        }
        vf e[64], tot = splath(0.0f), cp = splath(0.0f);
        for (int64_t k = 0; k < K; k++) {
            e[k] = exph(ldh(z + k * BP + v) - mx);
            tot += e[k];
        }
        for (int64_t k = 0; k < K; k++) {
            e[k] = e[k] / tot;
            if (tr) cp += selh(ldh(tr + k * BP + v) - e[k] > 0.0f, e[k], splath(0.0f));
        }
        for (int64_t k = 0; k < K; k++) {
            vf gk = e[k] - selh(y == (int32_t)k, splath(1.0f), splath(0.0f));
            if (tr) {
                const vf c = selh(ldh(tr + k * BP + v) - e[k] > 0.0f, splath(1.0f), splath(0.0f));
                gk += -pen_w * e[k] * (c - cp);
            }
            sth(dz + k * BP + v, selh(live, gk * inv_n, splath(0.0f)));
        }
    }
}

/* One epoch of every member.
 *   params, m, v   [E][P] (m, v: Adam's moments); steps [E]: Adam steps taken so far
 *   xptr, xcol, xval: the training rows in CSR form (columns ascending), y [.], aux [.][K]
 *                  (or NULL): member e's row r is row xbase[e] + r of the CSR matrix,
 *                  y[ybase[e] + r], aux[abase[e] + r]
 *   idx [E][stride]: member e trains on rows idx[e][0 .. sizes[e]) in mini-batches of B
 *   P a multiple of LANES (trailing parameters: zeros, never used); W state rows, the logits rows logit0 .. logit0 + K, zw the input op's width
 * Returns 0, -1 when out of memory, -2 when K > 64. */
int ski_train_epoch(int64_t E, int64_t P, float *params, float *m, float *v, int64_t *steps,
                    const int64_t *xptr, const int32_t *xcol, const float *xval,
                    const int64_t *xbase, const int64_t *y, const int64_t *ybase,
                    const float *aux, const int64_t *abase, const int64_t *idx, int64_t stride,
                    const int64_t *sizes, int64_t B, const int32_t *ops_raw, int64_t nops,
                    const float *masks, const int32_t *cidx, int64_t W, int64_t logit0,
                    int64_t K, int64_t zw, float lr, float b1, float b2, float eps,
                    float pen_w)
{
    const op_t *ops = (const op_t *)ops_raw;
    if (K > 64) return -2;
#ifdef HAVE_MXCSR
    /* flush denormals to zero (as the PyTorch trainer does): gradients through KBANN's
     * saturated sigmoids reach 1e-38, and arithmetic on denormals takes microcode assists
     * of ~100 cycles each; the flag changes numbers only below 1.2e-38 */
    const unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040);      /* FTZ | DAZ */
#endif
    const int64_t BP = (B + CHUNK - 1) / CHUNK * CHUNK;
    zw = zw > 0 ? zw : LANES;
    int64_t tw = LANES;             /* the widest dense op's inputs, padded */
    for (int64_t o = 0; o < nops; o++)
        if (ops[o].kind == K_DENSE && (ops[o].nin + LANES - 1) / LANES * LANES > tw)
            tw = (ops[o].nin + LANES - 1) / LANES * LANES;
    /* every state row is written before it is read, except rows no op writes (and a slack
     * of LANES rows read by the transposes): zero */
    float *S = calloc((size_t)((W + LANES) * BP), sizeof(float));
    float *T = malloc(sizeof(float) * (size_t)(BP * tw));
    float *dS = malloc(sizeof(float) * (size_t)(W * BP));
    float *Z = malloc(sizeof(float) * (size_t)(BP * zw));
    float *G = malloc(sizeof(float) * (size_t)P);
    float *ones = malloc(sizeof(float) * (size_t)BP);
    float *tr = aux ? malloc(sizeof(float) * (size_t)(K * BP)) : NULL;
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)BP);
    const int32_t **nzi = malloc(sizeof(*nzi) * (size_t)BP);
    const float **nzv = malloc(sizeof(*nzv) * (size_t)BP);
    int64_t *nnz = malloc(sizeof(int64_t) * (size_t)BP);
    int rc = 0;
    if (!S || !dS || !T || !Z || !G || !ones || (aux && !tr) || !lab || !nzi || !nzv || !nnz) {
        rc = -1;
        goto done;
    }
    for (int64_t j = 0; j < BP; j++) ones[j] = 1.0f;
    for (int64_t e = 0; e < E; e++) {
        float *p = params + e * P, *pm = m + e * P, *pv = v + e * P;
        const int64_t n = sizes[e];
        const int64_t *rows = idx + e * stride;
        for (int64_t start = 0; start < n; start += B) {
            const int64_t nb = n - start < B ? n - start : B;
            const float inv_n = 1.0f / (float)nb;
            for (int64_t j = 0; j < BP; j++) {
                if (j < nb) {
                    const int64_t r = rows[start + j], xr = xbase[e] + r;
                    nzi[j] = xcol + xptr[xr];
                    nzv[j] = xval + xptr[xr];
                    nnz[j] = xptr[xr + 1] - xptr[xr];
                    lab[j] = (int32_t)y[ybase[e] + r];
                    if (tr)
                        for (int64_t k = 0; k < K; k++) tr[k * BP + j] = aux[(abase[e] + r) * K + k];
                } else {
                    nzi[j] = NULL;
                    nzv[j] = NULL;
                    nnz[j] = 0;
                    lab[j] = -1;
                    if (tr)
                        for (int64_t k = 0; k < K; k++) tr[k * BP + j] = 0.0f;
                }
            }
            /* the next mini-batch's rows are scattered over the training set: ask for them
             * now, while this step computes */
            for (int64_t j = start + B; j < start + 2 * B && j < n; j++) {
                const int64_t r = xbase[e] + rows[j];
                __builtin_prefetch(xcol + xptr[r]);
                __builtin_prefetch(xval + xptr[r]);
            }
            batch_t bt = {S, dS, Z, T, W, BP, zw, nb, nnz, nzi, nzv};
            for (int64_t o = 0; o < nops; o++) op_forward(&ops[o], p, masks, cidx, &bt);
            memset(dS, 0, sizeof(float) * (size_t)(W * BP));
            loss_grad(S + logit0 * BP, K, lab, tr, pen_w, inv_n, BP, dS + logit0 * BP);
            memset(G, 0, sizeof(float) * (size_t)P);
            for (int64_t o = nops - 1; o >= 0; o--) op_backward(&ops[o], p, cidx, G, ones, &bt);
            /* Adam (PyTorch's: eps added to the bias-corrected sqrt(v)), HW parameters at a
             * time */
            const int64_t t = ++steps[e];
            const float step_size = (float)(lr / (1.0 - pow((double)b1, (double)t)));
            /* sqrt(v / bc2) as sqrt(v) * (1 / sqrt(bc2)): one division per element fewer */
            const float rbc2s = (float)(1.0 / sqrt(1.0 - pow((double)b2, (double)t)));
            const vf vb1 = splath(b1), vb2 = splath(b2), vc1 = splath(1.0f - b1),
                     vc2 = splath(1.0f - b2);
            for (int64_t i = 0; i < P; i += HW) {
                const vf gi = ldh(G + i);
                const vf mi = vb1 * ldh(pm + i) + vc1 * gi;
                const vf vi_ = vb2 * ldh(pv + i) + vc2 * gi * gi;
                sth(pm + i, mi);
                sth(pv + i, vi_);
                sth(p + i, ldh(p + i) - step_size * mi * reciph(sqrth(vi_) * rbc2s + eps));
            }
        }
    }
done:
    free(S); free(dS); free(T); free(Z); free(G); free(ones); free(tr); free(lab); free(nzi); free(nzv);
    free(nnz);
#ifdef HAVE_MXCSR
    _mm_setcsr(csr);
#endif
    return rc;
}
