/* The native SKI trainer: one epoch of mini-batch Adam for every member of an ensemble of
 * small networks, each member's whole epoch run in cache (see native.py for the Python side
 * and the network plan it passes; ensemble.py has the PyTorch trainer it is tested against).
 *
 * A network is a list of ops over a per-sample state row S[W] (W a multiple of LANES):
 *   INPUT  out = act(base + x @ Wt)        x: the sample's features, zeros skipped
 *   DENSE  out = act(base + S[in] @ Wt)    S[in] a contiguous range (nin may be 0)
 *   COPY   out[o] = S[src[o]]              (no parameters)
 * base: a bias (parameters) or a range of S (pre-activations computed by an earlier op);
 * act: identity, ReLU or the logistic sigmoid.  Weights are stored input-major,
 * Wt[nin][nout], every output width padded to a multiple of LANES with structural zeros
 * (zero weights, zeroed outputs: their gradients are exactly 0, so Adam never moves them).
 * The loss is the mean over the mini-batch of the softmax cross-entropy of the K logits,
 * plus (KILL) pen_w * sum_k max(0, r_k - p_k) for per-sample rule truths r.
 *
 * Determinism: compiled with -ffp-contract=off and without fast-math, every output element
 * is computed by the same sequence of IEEE operations whatever the vector width, and exp is
 * our own polynomial, not libm's: the same numbers on any machine.  Members never share a
 * sum, so a member's numbers do not depend on which others are in the ensemble.
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

enum { K_INPUT = 0, K_DENSE = 1, K_COPY = 2 };
enum { A_ID = 0, A_RELU = 1, A_SIGMOID = 2 };
enum { B_NONE = 0, B_PARAM = 1, B_STATE = 2 };

typedef struct {
    int32_t kind, act, in0, nin, out0, nout, base_kind, base_off, w_off, mask_off, wt_off,
        idx_off;
} op_t;

/* A block of LANES floats (GCC/Clang vector extension: AVX-512, 2 x AVX2 or 4 x SSE
 * registers; each lane computes the same IEEE operations as scalar code would). */
typedef float v16 __attribute__((vector_size(4 * LANES)));
typedef int32_t i16v __attribute__((vector_size(4 * LANES)));

static inline v16 ld(const float *p) { v16 r; memcpy(&r, p, sizeof r); return r; }
static inline void st(float *p, v16 x) { memcpy(p, &x, sizeof x); }
static inline v16 splat(float a) { return (v16){0} + a; }
/* c + a * b with a single rounding (fused multiply-add), so the same numbers whether the CPU
 * has an FMA instruction (AVX-512, AVX2 + FMA, ARM64: one per block) or not (libm's fmaf,
 * exact but slow) */
static inline v16 mad(float a, v16 b, v16 c)
{
#if defined(__AVX512F__)
    return (v16)_mm512_fmadd_ps(_mm512_set1_ps(a), (__m512)b, (__m512)c);
#elif defined(__FMA__)
    union { v16 v; __m256 h[2]; } B = {b}, C = {c}, R;
    const __m256 A = _mm256_set1_ps(a);
    R.h[0] = _mm256_fmadd_ps(A, B.h[0], C.h[0]);
    R.h[1] = _mm256_fmadd_ps(A, B.h[1], C.h[1]);
    return R.v;
#elif defined(__aarch64__)
    union { v16 v; float32x4_t q[4]; } B = {b}, C = {c}, R;
    for (int i = 0; i < 4; i++) R.q[i] = vfmaq_n_f32(C.q[i], B.q[i], a);
    return R.v;
#else
    v16 r;
    for (int k = 0; k < LANES; k++) r[k] = fmaf(a, b[k], c[k]);
    return r;
#endif
}

static inline v16 sel(i16v m, v16 a, v16 b) { return (v16)((m & (i16v)a) | (~m & (i16v)b)); }

/* exp(x) for x clamped to [-87, 88]: Cody-Waite reduction and Cephes' degree-6 polynomial
 * (relative error ~2e-7), branch-free. */
static inline v16 exp_v(v16 x)
{
    x = sel(x < -87.0f, splat(-87.0f), x);
    x = sel(x > 88.0f, splat(88.0f), x);
    v16 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    v16 r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    v16 p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    i16v bits = (__builtin_convertvector(n, i16v) + 127) << 23;
    return p * (v16)bits;
}

static inline float exp_f(float x)
{
    v16 r = exp_v(splat(x));
    return r[0];
}

static inline v16 activate(int act, v16 z)
{
    if (act == A_RELU) return sel(z > 0.0f, z, splat(0.0f));
    if (act == A_SIGMOID) return 1.0f / (1.0f + exp_v(-z));
    return z;
}

/* dL/d(pre-activation) from dL/d(output) and the output */
static inline v16 dactivate(int act, v16 h, v16 d)
{
    if (act == A_RELU) return sel(h > 0.0f, d, splat(0.0f));
    if (act == A_SIGMOID) return d * (h * (1.0f - h));
    return d;
}

/* The mini-batch: nb state rows S[j * W ...], their gradients dS, and each sample's non-zero
 * features (nnz[j] of them, columns nzi[j][.] and values nzv[j][.]). */
typedef struct {
    float *S, *dS;
    int64_t W, nb;
    const int64_t *nnz;
    const int32_t **nzi;
    const float **nzv;
} batch_t;

/* Dependent additions are what limits these small products (an add waits ~4 cycles for the
 * previous one into the same accumulator), so the loops below keep 4 independent
 * accumulators: 4 samples sharing a weight row, or 4 weight rows sharing a sample. Every
 * accumulator still adds its terms in the natural order. */

static inline v16 base_of(const op_t *op, const float *p, const float *s, int64_t ob)
{
    if (op->base_kind == B_PARAM) return ld(p + op->base_off + ob);
    if (op->base_kind == B_STATE) return ld(s + op->base_off + ob);
    return splat(0.0f);
}

static void input_forward(const op_t *op, const float *p, const float *mask, batch_t *bt)
{
    const int64_t nout = op->nout;
    const float *w = p + op->w_off;
    for (int64_t j = 0; j < bt->nb; j++) {
        float *s = bt->S + j * bt->W;
        const int32_t *nzi = bt->nzi[j];
        const float *nzv = bt->nzv[j];
        const int64_t nnz = bt->nnz[j];
        int64_t ob = 0;
        for (; ob + 4 * LANES <= nout; ob += 4 * LANES) {
            v16 a0 = base_of(op, p, s, ob), a1 = base_of(op, p, s, ob + LANES),
                a2 = base_of(op, p, s, ob + 2 * LANES), a3 = base_of(op, p, s, ob + 3 * LANES);
            for (int64_t q = 0; q < nnz; q++) {
                const float a = nzv[q];
                const float *wr = w + (int64_t)nzi[q] * nout + ob;
                a0 = mad(a, ld(wr), a0); a1 = mad(a, ld(wr + LANES), a1);
                a2 = mad(a, ld(wr + 2 * LANES), a2); a3 = mad(a, ld(wr + 3 * LANES), a3);
            }
            const float *mk = mask + op->mask_off + ob;
            st(s + op->out0 + ob, activate(op->act, a0) * ld(mk));
            st(s + op->out0 + ob + LANES, activate(op->act, a1) * ld(mk + LANES));
            st(s + op->out0 + ob + 2 * LANES, activate(op->act, a2) * ld(mk + 2 * LANES));
            st(s + op->out0 + ob + 3 * LANES, activate(op->act, a3) * ld(mk + 3 * LANES));
        }
        for (; ob < nout; ob += LANES) {
            v16 a0 = base_of(op, p, s, ob);
            for (int64_t q = 0; q < nnz; q++) a0 = mad(nzv[q], ld(w + (int64_t)nzi[q] * nout + ob), a0);
            st(s + op->out0 + ob, activate(op->act, a0) * ld(mask + op->mask_off + ob));
        }
    }
}

static void dense_forward(const op_t *op, const float *p, const float *mask, batch_t *bt)
{
    const int64_t nout = op->nout, nin = op->nin, W = bt->W;
    const float *w = p + op->w_off;
    for (int64_t ob = 0; ob < nout; ob += LANES) {
        const v16 mk = ld(mask + op->mask_off + ob);
        int64_t j = 0;
        for (; j + 4 <= bt->nb; j += 4) {
            float *s0 = bt->S + j * W, *s1 = s0 + W, *s2 = s1 + W, *s3 = s2 + W;
            v16 a0 = base_of(op, p, s0, ob), a1 = base_of(op, p, s1, ob),
                a2 = base_of(op, p, s2, ob), a3 = base_of(op, p, s3, ob);
            const float *i0 = s0 + op->in0, *i1 = s1 + op->in0, *i2 = s2 + op->in0,
                        *i3 = s3 + op->in0;
            for (int64_t r = 0; r < nin; r++) {
                const v16 wr = ld(w + r * nout + ob);
                a0 = mad(i0[r], wr, a0); a1 = mad(i1[r], wr, a1); a2 = mad(i2[r], wr, a2); a3 = mad(i3[r], wr, a3);
            }
            st(s0 + op->out0 + ob, activate(op->act, a0) * mk);
            st(s1 + op->out0 + ob, activate(op->act, a1) * mk);
            st(s2 + op->out0 + ob, activate(op->act, a2) * mk);
            st(s3 + op->out0 + ob, activate(op->act, a3) * mk);
        }
        for (; j < bt->nb; j++) {
            float *s0 = bt->S + j * W;
            v16 a0 = base_of(op, p, s0, ob);
            const float *i0 = s0 + op->in0;
            for (int64_t r = 0; r < nin; r++) a0 = mad(i0[r], ld(w + r * nout + ob), a0);
            st(s0 + op->out0 + ob, activate(op->act, a0) * mk);
        }
    }
}

static void op_forward(const op_t *op, const float *p, const float *mask, const int32_t *cidx,
                       batch_t *bt)
{
    if (op->kind == K_COPY) {
        for (int64_t j = 0; j < bt->nb; j++) {
            float *s = bt->S + j * bt->W;
            for (int64_t o = 0; o < op->nout; o++) {
                int32_t c = cidx[op->idx_off + o];
                s[op->out0 + o] = c >= 0 ? s[c] : 0.0f;
            }
        }
    } else if (op->kind == K_INPUT) {
        input_forward(op, p, mask, bt);
    } else {
        dense_forward(op, p, mask, bt);
    }
}

/* dW = sum over the samples of in_j (x) g_j, rows in groups of 4 */
static void dense_weight_grad(const op_t *op, float *gw, const batch_t *bt)
{
    const int64_t nout = op->nout, nin = op->nin, W = bt->W;
    const float *S = bt->S, *dS = bt->dS;
    for (int64_t ob = 0; ob < nout; ob += LANES) {
        int64_t r = 0;
        for (; r + 4 <= nin; r += 4) {
            v16 a0 = splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t j = 0; j < bt->nb; j++) {
                const float *in = S + j * W + op->in0 + r;
                const v16 g = ld(dS + j * W + op->out0 + ob);
                a0 = mad(in[0], g, a0); a1 = mad(in[1], g, a1); a2 = mad(in[2], g, a2); a3 = mad(in[3], g, a3);
            }
            float *g0 = gw + r * nout + ob;
            st(g0, ld(g0) + a0);
            st(g0 + nout, ld(g0 + nout) + a1);
            st(g0 + 2 * nout, ld(g0 + 2 * nout) + a2);
            st(g0 + 3 * nout, ld(g0 + 3 * nout) + a3);
        }
        for (; r < nin; r++) {
            v16 a0 = splat(0.0f);
            for (int64_t j = 0; j < bt->nb; j++)
                a0 = mad(S[j * W + op->in0 + r], ld(dS + j * W + op->out0 + ob), a0);
            st(gw + r * nout + ob, ld(gw + r * nout + ob) + a0);
        }
    }
}

/* dL/d(inputs) += g_j @ W^T through the transposed copy wt[nout][nin]: a sum of rows, 4
 * samples at a time */
static void dense_input_grad(const op_t *op, const float *wt, batch_t *bt)
{
    const int64_t nout = op->nout, nin = op->nin, W = bt->W;
    for (int64_t rb = 0; rb < nin; rb += LANES) {
        int64_t j = 0;
        for (; j + 4 <= bt->nb; j += 4) {
            float *d0 = bt->dS + j * W, *d1 = d0 + W, *d2 = d1 + W, *d3 = d2 + W;
            const float *g0 = d0 + op->out0, *g1 = d1 + op->out0, *g2 = d2 + op->out0,
                        *g3 = d3 + op->out0;
            v16 a0 = splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t o = 0; o < nout; o++) {
                const v16 w = ld(wt + o * nin + rb);
                a0 = mad(g0[o], w, a0); a1 = mad(g1[o], w, a1); a2 = mad(g2[o], w, a2); a3 = mad(g3[o], w, a3);
            }
            st(d0 + op->in0 + rb, ld(d0 + op->in0 + rb) + a0);
            st(d1 + op->in0 + rb, ld(d1 + op->in0 + rb) + a1);
            st(d2 + op->in0 + rb, ld(d2 + op->in0 + rb) + a2);
            st(d3 + op->in0 + rb, ld(d3 + op->in0 + rb) + a3);
        }
        for (; j < bt->nb; j++) {
            float *d0 = bt->dS + j * W;
            v16 a0 = splat(0.0f);
            for (int64_t o = 0; o < nout; o++) a0 = mad(d0[op->out0 + o], ld(wt + o * nin + rb), a0);
            st(d0 + op->in0 + rb, ld(d0 + op->in0 + rb) + a0);
        }
    }
}

/* backward of one op over the mini-batch: dS[out] holds dL/d(output) on entry and dL/d(pre-
 * activation) on exit; gradients of parameters are added to G, of inputs to dS. */
static void op_backward(const op_t *op, const float *wt, const int32_t *cidx, float *G,
                        batch_t *bt)
{
    const int64_t nout = op->nout, W = bt->W;
    if (op->kind == K_COPY) {
        for (int64_t j = 0; j < bt->nb; j++) {
            float *ds = bt->dS + j * W;
            for (int64_t o = 0; o < nout; o++) {
                int32_t c = cidx[op->idx_off + o];
                if (c >= 0) ds[c] += ds[op->out0 + o];
            }
        }
        return;
    }
    for (int64_t j = 0; j < bt->nb; j++) {
        float *g = bt->dS + j * W + op->out0;
        const float *h = bt->S + j * W + op->out0;
        for (int64_t ob = 0; ob < nout; ob += LANES)
            st(g + ob, dactivate(op->act, ld(h + ob), ld(g + ob)));
        if (op->base_kind == B_STATE) {
            float *gs = bt->dS + j * W + op->base_off;
            for (int64_t ob = 0; ob < nout; ob += LANES) st(gs + ob, ld(gs + ob) + ld(g + ob));
        }
    }
    if (op->base_kind == B_PARAM) {
        float *gb = G + op->base_off;
        for (int64_t ob = 0; ob < nout; ob += LANES) {
            v16 a0 = splat(0.0f);
            for (int64_t j = 0; j < bt->nb; j++) a0 += ld(bt->dS + j * W + op->out0 + ob);
            st(gb + ob, ld(gb + ob) + a0);
        }
    }
    float *gw = G + op->w_off;
    if (op->kind == K_INPUT) {
        for (int64_t j = 0; j < bt->nb; j++) {
            const float *g = bt->dS + j * W + op->out0;
            const int32_t *nzi = bt->nzi[j];
            const float *nzv = bt->nzv[j];
            for (int64_t q = 0; q < bt->nnz[j]; q++) {
                const float a = nzv[q];
                float *gr = gw + (int64_t)nzi[q] * nout;
                for (int64_t ob = 0; ob < nout; ob += LANES)
                    st(gr + ob, mad(a, ld(g + ob), ld(gr + ob)));
            }
        }
        return;
    }
    if (op->nin == 0) return;
    dense_weight_grad(op, gw, bt);
    dense_input_grad(op, wt, bt);
}

/* softmax cross-entropy (+ KILL penalty) gradient of one sample's logits, scaled by inv_n */
static void loss_grad(const float *z, int64_t K, int64_t label, const float *truth,
                      float pen_w, float inv_n, float *dz)
{
    float mx = z[0];
    for (int64_t k = 1; k < K; k++) mx = z[k] > mx ? z[k] : mx;
    float e[64], tot = 0.0f;
    for (int64_t k = 0; k < K; k++) { e[k] = exp_f(z[k] - mx); tot += e[k]; }
    float cp = 0.0f;
    for (int64_t k = 0; k < K; k++) {
        e[k] = e[k] / tot;
        if (truth && truth[k] - e[k] > 0.0f) cp += e[k];
    }
    for (int64_t k = 0; k < K; k++) {
        float gk = e[k] - (k == label ? 1.0f : 0.0f);
        if (truth) {
            float c = truth[k] - e[k] > 0.0f ? 1.0f : 0.0f;
            gk += -pen_w * e[k] * (c - cp);
        }
        dz[k] = gk * inv_n;
    }
}

/* One epoch of every member.
 *   params, m, v   [E][P] (m, v: Adam's moments); steps [E]: Adam steps taken so far
 *   xptr, xcol, xval: the training rows in CSR form (columns ascending), y [.], aux [.][K]
 *                  (or NULL): member e's row r is row xbase[e] + r of the CSR matrix,
 *                  y[ybase[e] + r], aux[abase[e] + r]
 *   idx [E][stride]: member e trains on rows idx[e][0 .. sizes[e]) in mini-batches of B
 * Returns 0, -1 when out of memory, -2 when K > 64. */
int ski_train_epoch(int64_t E, int64_t P, float *params, float *m, float *v, int64_t *steps,
                    const int64_t *xptr, const int32_t *xcol, const float *xval,
                    const int64_t *xbase, const int64_t *y, const int64_t *ybase,
                    const float *aux, const int64_t *abase, const int64_t *idx, int64_t stride,
                    const int64_t *sizes, int64_t B, const int32_t *ops_raw, int64_t nops,
                    const float *masks, const int32_t *cidx, int64_t W, int64_t logit0,
                    int64_t K, int64_t wt_total, float lr, float b1, float b2, float eps,
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
    float *S = malloc(sizeof(float) * (size_t)(B * W));
    float *dS = malloc(sizeof(float) * (size_t)(B * W));
    float *G = malloc(sizeof(float) * (size_t)P);
    float *WT = malloc(sizeof(float) * (size_t)(wt_total > 0 ? wt_total : 1));
    const int32_t **nzi = malloc(sizeof(*nzi) * (size_t)B);
    const float **nzv = malloc(sizeof(*nzv) * (size_t)B);
    int64_t *nnz = malloc(sizeof(int64_t) * (size_t)B);
    int rc = 0;
    if (!S || !dS || !G || !WT || !nzi || !nzv || !nnz) {
        rc = -1;
        goto done;
    }
    for (int64_t e = 0; e < E; e++) {
        float *p = params + e * P, *pm = m + e * P, *pv = v + e * P;
        const int64_t n = sizes[e];
        const int64_t *rows = idx + e * stride;
        for (int64_t start = 0; start < n; start += B) {
            const int64_t nb = n - start < B ? n - start : B;
            const float inv_n = 1.0f / (float)nb;
            for (int64_t j = 0; j < nb; j++) {
                const int64_t r = xbase[e] + rows[start + j];
                nzi[j] = xcol + xptr[r];
                nzv[j] = xval + xptr[r];
                nnz[j] = xptr[r + 1] - xptr[r];
            }
            /* the next mini-batch's rows are scattered over the training set: ask for them
             * now, while this step computes */
            for (int64_t j = start + B; j < start + 2 * B && j < n; j++) {
                const int64_t r = xbase[e] + rows[j];
                __builtin_prefetch(xcol + xptr[r]);
                __builtin_prefetch(xval + xptr[r]);
            }
            batch_t bt = {S, dS, W, nb, nnz, nzi, nzv};
            /* forward, op by op (an op's weights stay in L1 over the samples) */
            for (int64_t j = 0; j < nb; j++) memset(S + j * W, 0, sizeof(float) * (size_t)W);
            for (int64_t o = 0; o < nops; o++) op_forward(&ops[o], p, masks, cidx, &bt);
            /* loss gradient at the logits */
            memset(dS, 0, sizeof(float) * (size_t)(nb * W));
            for (int64_t j = 0; j < nb; j++) {
                const int64_t r = rows[start + j];
                loss_grad(S + j * W + logit0, K, y[ybase[e] + r],
                          aux ? aux + (abase[e] + r) * K : NULL, pen_w, inv_n,
                          dS + j * W + logit0);
            }
            /* transposed weights for the input gradients */
            for (int64_t o = 0; o < nops; o++) {
                const op_t *op = &ops[o];
                if (op->kind != K_DENSE || op->nin == 0) continue;
                const float *w = p + op->w_off;
                float *wt = WT + op->wt_off;
                for (int64_t r = 0; r < op->nin; r++)
                    for (int64_t c = 0; c < op->nout; c++) wt[c * op->nin + r] = w[r * op->nout + c];
            }
            memset(G, 0, sizeof(float) * (size_t)P);
            for (int64_t o = nops - 1; o >= 0; o--)
                op_backward(&ops[o], WT + ops[o].wt_off, cidx, G, &bt);
            /* Adam (PyTorch's: eps added to the bias-corrected sqrt(v)) */
            const int64_t t = ++steps[e];
            const float step_size = (float)(lr / (1.0 - pow((double)b1, (double)t)));
            /* sqrt(v / bc2) as sqrt(v) * (1 / sqrt(bc2)): one division per element fewer */
            const float rbc2s = (float)(1.0 / sqrt(1.0 - pow((double)b2, (double)t)));
            const float c1 = 1.0f - b1, c2 = 1.0f - b2;
            for (int64_t i = 0; i < P; i++) {
                const float gi = G[i];
                const float mi = b1 * pm[i] + c1 * gi;
                const float vi = b2 * pv[i] + c2 * gi * gi;
                pm[i] = mi;
                pv[i] = vi;
                p[i] -= step_size * mi / (sqrtf(vi) * rbc2s + eps);
            }
        }
    }
done:
    free(S); free(dS); free(G); free(WT); free(nzi); free(nzv); free(nnz);
#ifdef HAVE_MXCSR
    _mm_setcsr(csr);
#endif
    return rc;
}
