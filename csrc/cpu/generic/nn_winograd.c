/* generic/nn_winograd.c: 3x3 stride-1 undilated convolution by Winograd's F(2x2, 3x3) minimal
 * filtering, for float32 or float64 (included by nn_conv.c through generate_one.h for f32 and
 * f64; GEMM is the pass's).
 *
 * Each 2x2 block of outputs ("tile") comes from a 4x4 input patch d: y = A^T [(G w G^T) .*
 * (B^T d B)] A. The 16 products of the bracket, summed over input planes, are 16 GEMMs
 * (one per position xi of the 4x4 transform): M_xi (Og x T) = U_xi (Og x Cg) * V_xi (Cg x T)
 * over T tiles, 16*Og*Cg*T multiply-adds where im2col + GEMM does 36*Og*Cg*T: 2.25 times
 * fewer. The GEMMs are shorter (inner size Cg rather than 9*Cg), so it is used for planes
 * enough to keep them efficient (nn_conv.c: wino_ok). F(2x2, 3x3)'s transforms hold only 0,
 * +-1 and +-1/2, so rounding stays at the level of the direct sums' (the larger tiles of
 * F(4x4, 3x3) would save more multiplies at a real cost in float32 accuracy). */
/* U[xi][o][c] (16 x O x Cg) = G w[o][c] G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] */
static void MT_G(wino_weights)(const scalar_t *w, scalar_t *U, const conv_geom *g) {
  const int64_t OC = g->O * g->Cg;
#pragma omp parallel for schedule(static) if (OC > 4096)
  for (int64_t oc = 0; oc < OC; oc++) {
    const scalar_t *k = w + oc * 9;
    scalar_t t[4][3], u[4][4];
    for (int j = 0; j < 3; j++) {
      scalar_t a = k[j], b = k[3 + j], c = k[6 + j];
      t[0][j] = a, t[1][j] = (a + b + c) / 2, t[2][j] = (a - b + c) / 2, t[3][j] = c;
    }
    for (int i = 0; i < 4; i++) {
      scalar_t a = t[i][0], b = t[i][1], c = t[i][2];
      u[i][0] = a, u[i][1] = (a + b + c) / 2, u[i][2] = (a - b + c) / 2, u[i][3] = c;
    }
    for (int xi = 0; xi < 16; xi++) U[xi * OC + oc] = u[xi / 4][xi % 4];
  }
}

/* The transforms run a row of tiles at a time through these loops over whole rows, whose
 * restrict parameters let them vectorize (the same loops inline in the callers did not). */

/* vertical B^T over 4 rows: t0 = r0 - r2, t1 = r1 + r2, t2 = r2 - r1, t3 = r1 - r3 */
static void MT_G(wino_bt_rows)(const scalar_t *restrict r0, const scalar_t *restrict r1, const scalar_t *restrict r2,
                               const scalar_t *restrict r3, scalar_t *restrict t0, scalar_t *restrict t1,
                               scalar_t *restrict t2, scalar_t *restrict t3, int64_t n) {
  for (int64_t j = 0; j < n; j++)
    t0[j] = r0[j] - r2[j], t1[j] = r1[j] + r2[j], t2[j] = r2[j] - r1[j], t3[j] = r1[j] - r3[j];
}

/* horizontal B^T: tile tx of row t covers columns 2tx..2tx+3 */
static void MT_G(wino_bt_cols)(const scalar_t *restrict t, scalar_t *restrict v0, scalar_t *restrict v1,
                               scalar_t *restrict v2, scalar_t *restrict v3, int64_t tW) {
  for (int64_t tx = 0; tx < tW; tx++) {
    scalar_t c0 = t[2 * tx], c1 = t[2 * tx + 1], c2 = t[2 * tx + 2], c3 = t[2 * tx + 3];
    v0[tx] = c0 - c2, v1[tx] = c1 + c2, v2[tx] = c2 - c1, v3[tx] = c1 - c3;
  }
}

/* A^T over 4 values: e = m0 + m1 + m2 + b, o = m1 - m2 - m3 + b (b = 0 for the vertical pass) */
static void MT_G(wino_at)(const scalar_t *restrict m0, const scalar_t *restrict m1, const scalar_t *restrict m2,
                          const scalar_t *restrict m3, scalar_t *restrict e, scalar_t *restrict o, scalar_t b,
                          int64_t n) {
  for (int64_t k = 0; k < n; k++) e[k] = m0[k] + m1[k] + m2[k] + b, o[k] = m1[k] - m2[k] - m3[k] + b;
}

static void MT_G(wino_interleave)(const scalar_t *restrict e, const scalar_t *restrict o, scalar_t *restrict y,
                                  int64_t n) {
  for (int64_t k = 0; k < n; k++) y[2 * k] = e[k], y[2 * k + 1] = o[k];
}

/* V[xi][c][t] (xi matrices vs apart, t = ty*tW + tx) = B^T d B for the tiles of one input
 * plane, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: per row of tiles, its 4 input rows
 * zero-padded (r), their vertical transform (t), then the horizontal one into V. scratch holds
 * wino_scratch(g) elements (nn_conv.c). */
static void MT_G(wino_input)(const scalar_t *x, scalar_t *V, int64_t vs, scalar_t *scratch, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, tH = (g->oH + 1) / 2, tW = (g->oW + 1) / 2, R = 2 * tW + 2;
  scalar_t *r = scratch, *t = scratch + 4 * R;
  /* window column j is input column j - pW: inside the image for j in [jlo, jhi) */
  int64_t jlo = g->pW < R ? g->pW : R, jhi = W + g->pW < R ? W + g->pW : R;
  if (jhi < jlo) jhi = jlo;
  for (int64_t ty = 0; ty < tH; ty++) {
    for (int k = 0; k < 4; k++) {
      scalar_t *rk = r + k * R;
      int64_t iy = 2 * ty - g->pH + k;
      if (iy < 0 || iy >= H) {
        memset(rk, 0, sizeof(scalar_t) * R);
        continue;
      }
      memset(rk, 0, sizeof(scalar_t) * jlo);
      if (jhi > jlo) memcpy(rk + jlo, x + iy * W + (jlo - g->pW), sizeof(scalar_t) * (jhi - jlo));
      memset(rk + jhi, 0, sizeof(scalar_t) * (R - jhi));
    }
    MT_G(wino_bt_rows)(r, r + R, r + 2 * R, r + 3 * R, t, t + R, t + 2 * R, t + 3 * R, R);
    for (int i = 0; i < 4; i++) {
      scalar_t *v = V + 4 * i * vs + ty * tW;
      MT_G(wino_bt_cols)(t + i * R, v, v + vs, v + 2 * vs, v + 3 * vs, tW);
    }
  }
}

/* y plane (oH x oW) from M[xi][t] (xi matrices ms apart), A^T = [1 1 1 0; 0 1 -1 -1], plus b;
 * per row of tiles: the vertical pass (a: first output row, c: second), the horizontal one
 * (even and odd columns), interleaved into y. */
static void MT_G(wino_output)(const scalar_t *M, int64_t ms, scalar_t *y, scalar_t b, scalar_t *scratch,
                              const conv_geom *g) {
  const int64_t oH = g->oH, oW = g->oW, tH = (oH + 1) / 2, tW = (oW + 1) / 2;
  scalar_t *a = scratch, *c = scratch + 4 * tW, *eo = scratch + 8 * tW; /* a, c: 4 rows of tW; eo: 4 */
  for (int64_t ty = 0; ty < tH; ty++) {
    const scalar_t *m = M + ty * tW;
    for (int j = 0; j < 4; j++) {
      const scalar_t *m0 = m + j * ms, *m1 = m + (4 + j) * ms, *m2 = m + (8 + j) * ms, *m3 = m + (12 + j) * ms;
      MT_G(wino_at)(m0, m1, m2, m3, a + j * tW, c + j * tW, 0, tW);
    }
    MT_G(wino_at)(a, a + tW, a + 2 * tW, a + 3 * tW, eo, eo + tW, b, tW);
    MT_G(wino_at)(c, c + tW, c + 2 * tW, c + 3 * tW, eo + 2 * tW, eo + 3 * tW, b, tW);
    for (int i = 0; i < 2 && 2 * ty + i < oH; i++) {
      scalar_t *yr = y + (2 * ty + i) * oW;
      const scalar_t *e = eo + 2 * i * tW, *o = e + tW;
      MT_G(wino_interleave)(e, o, yr, oW / 2);
      if (oW & 1) yr[oW - 1] = e[tW - 1];
    }
  }
}

/* d0 = p, d1 = p + q, d2 = p - q, d3 = -q: A = [1 0; 1 1; 1 -1; 0 -1] applied to a pair */
static void MT_G(wino_a_expand)(const scalar_t *restrict p, const scalar_t *restrict q, scalar_t *restrict d0,
                                scalar_t *restrict d1, scalar_t *restrict d2, scalar_t *restrict d3, int64_t n) {
  for (int64_t k = 0; k < n; k++) d0[k] = p[k], d1[k] = p[k] + q[k], d2[k] = p[k] - q[k], d3[k] = -q[k];
}

/* even and odd columns of a row of n columns into e, o (tW each; a missing last odd one is 0) */
static void MT_G(wino_split)(const scalar_t *restrict r, scalar_t *restrict e, scalar_t *restrict o, int64_t n) {
  for (int64_t k = 0; k < n / 2; k++) e[k] = r[2 * k], o[k] = r[2 * k + 1];
  if (n & 1) e[n / 2] = r[n - 1], o[n / 2] = 0;
}

/* D[xi][t] (xi matrices ds apart) = A dy_t A^T for the 2x2 tiles of one output-gradient plane
 * (zero beyond its edges): the adjoint of wino_output, for the weight gradient */
static void MT_G(wino_dy)(const scalar_t *dy, scalar_t *D, int64_t ds, scalar_t *scratch, const conv_geom *g) {
  const int64_t oH = g->oH, oW = g->oW, tH = (oH + 1) / 2, tW = (oW + 1) / 2;
  scalar_t *e0 = scratch, *o0 = e0 + tW, *e1 = o0 + tW, *o1 = e1 + tW, *E = o1 + tW, *O = E + 4 * tW;
  for (int64_t ty = 0; ty < tH; ty++) {
    MT_G(wino_split)(dy + 2 * ty * oW, e0, o0, oW);
    if (2 * ty + 1 < oH) MT_G(wino_split)(dy + (2 * ty + 1) * oW, e1, o1, oW);
    else memset(e1, 0, sizeof(scalar_t) * 2 * tW); /* e1 and o1 */
    MT_G(wino_a_expand)(e0, e1, E, E + tW, E + 2 * tW, E + 3 * tW, tW);
    MT_G(wino_a_expand)(o0, o1, O, O + tW, O + 2 * tW, O + 3 * tW, tW);
    for (int i = 0; i < 4; i++) {
      scalar_t *d = D + 4 * i * ds + ty * tW;
      MT_G(wino_a_expand)(E + i * tW, O + i * tW, d, d + ds, d + 2 * ds, d + 3 * ds, tW);
    }
  }
}

/* dw[o][c] += scale * G^T dU[o][c] G, dU summed over the nparts partial sums (16 x O x Cg each,
 * part_size apart): the adjoint of wino_weights */
static void MT_G(wino_weights_grad)(const scalar_t *dU, int64_t part_size, int nparts, scalar_t *dw, scalar_t scale,
                                    const conv_geom *g) {
  const int64_t OC = g->O * g->Cg;
#pragma omp for schedule(static)
  for (int64_t oc = 0; oc < OC; oc++) {
    scalar_t u[4][4], t[3][4];
    for (int xi = 0; xi < 16; xi++) {
      scalar_t s = 0;
      for (int k = 0; k < nparts; k++) s += dU[k * part_size + xi * OC + oc];
      u[xi / 4][xi % 4] = s;
    }
    for (int j = 0; j < 4; j++) {
      scalar_t a = u[0][j], b = u[1][j], c = u[2][j], d = u[3][j];
      t[0][j] = a + (b + c) / 2, t[1][j] = (b - c) / 2, t[2][j] = (b + c) / 2 + d;
    }
    scalar_t *k = dw + oc * 9;
    for (int i = 0; i < 3; i++) {
      scalar_t a = t[i][0], b = t[i][1], c = t[i][2], d = t[i][3];
      k[3 * i] += scale * (a + (b + c) / 2), k[3 * i + 1] += scale * ((b - c) / 2),
          k[3 * i + 2] += scale * ((b + c) / 2 + d);
    }
  }
}

/* V (16 x Cg x T, T = q * tiles) from the q images at x, channels of group gr: the input
 * transform both the forward and the weight gradient start with */
static void MT_G(wino_inputs)(const scalar_t *x, scalar_t *V, int64_t q, int64_t gr, scalar_t *scratch,
                              const conv_geom *g) {
  const int64_t tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2), Tn = q * tiles, HW = g->H * g->W;
  for (int64_t i = 0; i < q; i++)
    for (int64_t c = 0; c < g->Cg; c++)
      MT_G(wino_input)(x + i * g->C * HW + (gr * g->Cg + c) * HW, V + c * Tn + i * tiles, g->Cg * Tn, scratch, g);
}

/* dU (16 x O x Cg) = beta*dU + sum over q images' tiles of D_xi V_xi^T (beta 0 or 1);
 * V, D as in wino_piece */
static void MT_G(wino_wgrad_piece)(const scalar_t *x, const scalar_t *dy, scalar_t *dU, scalar_t beta, int64_t q,
                                   scalar_t *V, scalar_t *D, scalar_t *scratch, const conv_geom *g) {
  const int64_t tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2), Tn = q * tiles, Og = g->O / g->groups;
  const int64_t L = g->oH * g->oW, OC = g->O * g->Cg;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    MT_G(wino_inputs)(x, V, q, gr, scratch, g);
    for (int64_t i = 0; i < q; i++)
      for (int64_t o = 0; o < Og; o++)
        MT_G(wino_dy)(dy + (i * g->O + gr * Og + o) * L, D + o * Tn + i * tiles, Og * Tn, scratch, g);
    for (int xi = 0; xi < 16; xi++)
      GEMM(0, 1, Og, g->Cg, Tn, (scalar_t)1, D + xi * Og * Tn, Tn, V + xi * g->Cg * Tn, Tn, beta,
           dU + xi * OC + gr * Og * g->Cg, g->Cg, 0);
  }
}

/* forward of q images (x, y at the first): per group, transform, 16 GEMMs, transform back.
 * V is 16 x Cg x T, M 16 x Og x T (T = q * tiles per image), scratch wino_scratch(g) */
static void MT_G(wino_piece)(const scalar_t *x, const scalar_t *U, const scalar_t *b, scalar_t *y, int64_t q,
                             scalar_t *V, scalar_t *M, scalar_t *scratch, const conv_geom *g) {
  const int64_t tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2), Tn = q * tiles, Og = g->O / g->groups;
  const int64_t L = g->oH * g->oW, OC = g->O * g->Cg;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    MT_G(wino_inputs)(x, V, q, gr, scratch, g);
    for (int xi = 0; xi < 16; xi++)
      GEMM(0, 0, Og, Tn, g->Cg, (scalar_t)1, U + xi * OC + gr * Og * g->Cg, g->Cg, V + xi * g->Cg * Tn, Tn, (scalar_t)0,
           M + xi * Og * Tn, Tn, 0);
    for (int64_t i = 0; i < q; i++)
      for (int64_t o = 0; o < Og; o++) {
        scalar_t *yo = y + (i * g->O + gr * Og + o) * L;
        MT_G(wino_output)(M + o * Tn + i * tiles, Og * Tn, yo, b ? b[gr * Og + o] : 0, scratch, g);
      }
  }
}
