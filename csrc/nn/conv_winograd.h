/* conv_winograd.h: 3x3 stride-1 undilated convolution by Winograd's F(2x2, 3x3) minimal
 * filtering, written once and included by conv.c for float (SFX f32) and double (SFX f64).
 *
 * Each 2x2 block of outputs ("tile") comes from a 4x4 input patch d: y = A^T [(G w G^T) .*
 * (B^T d B)] A. The 16 products of the bracket, summed over input planes, are 16 GEMMs
 * (one per position xi of the 4x4 transform): M_xi (Og x T) = U_xi (Og x Cg) * V_xi (Cg x T)
 * over T tiles, 16*Og*Cg*T multiply-adds where im2col + GEMM does 36*Og*Cg*T: 2.25 times
 * fewer. The GEMMs are shorter (inner size Cg rather than 9*Cg), so it is used for planes
 * enough to keep them efficient (conv.c: wino_ok). F(2x2, 3x3)'s transforms hold only 0,
 * +-1 and +-1/2, so rounding stays at the level of the direct sums' (the larger tiles of
 * F(4x4, 3x3) would save more multiplies at a real cost in float32 accuracy). */
#define WCAT_(a, b) a##_##b
#define WCAT(a, b) WCAT_(a, b)

/* U[xi][o][c] (16 x O x Cg) = G w[o][c] G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] */
static void WCAT(wino_weights, SFX)(const T *w, T *U, const conv_geom *g) {
  const int64_t OC = g->O * g->Cg;
#pragma omp parallel for schedule(static) if (OC > 4096)
  for (int64_t oc = 0; oc < OC; oc++) {
    const T *k = w + oc * 9;
    T t[4][3], u[4][4];
    for (int j = 0; j < 3; j++) {
      T a = k[j], b = k[3 + j], c = k[6 + j];
      t[0][j] = a, t[1][j] = (a + b + c) / 2, t[2][j] = (a - b + c) / 2, t[3][j] = c;
    }
    for (int i = 0; i < 4; i++) {
      T a = t[i][0], b = t[i][1], c = t[i][2];
      u[i][0] = a, u[i][1] = (a + b + c) / 2, u[i][2] = (a - b + c) / 2, u[i][3] = c;
    }
    for (int xi = 0; xi < 16; xi++) U[xi * OC + oc] = u[xi / 4][xi % 4];
  }
}

/* The transforms run a row of tiles at a time through these loops over whole rows, whose
 * restrict parameters let them vectorize (the same loops inline in the callers did not). */

/* vertical B^T over 4 rows: t0 = r0 - r2, t1 = r1 + r2, t2 = r2 - r1, t3 = r1 - r3 */
static void WCAT(wino_bt_rows, SFX)(const T *restrict r0, const T *restrict r1, const T *restrict r2,
                                    const T *restrict r3, T *restrict t0, T *restrict t1, T *restrict t2,
                                    T *restrict t3, int64_t n) {
  for (int64_t j = 0; j < n; j++) t0[j] = r0[j] - r2[j], t1[j] = r1[j] + r2[j], t2[j] = r2[j] - r1[j], t3[j] = r1[j] - r3[j];
}

/* horizontal B^T: tile tx of row t covers columns 2tx..2tx+3 */
static void WCAT(wino_bt_cols, SFX)(const T *restrict t, T *restrict v0, T *restrict v1, T *restrict v2,
                                    T *restrict v3, int64_t tW) {
  for (int64_t tx = 0; tx < tW; tx++) {
    T c0 = t[2 * tx], c1 = t[2 * tx + 1], c2 = t[2 * tx + 2], c3 = t[2 * tx + 3];
    v0[tx] = c0 - c2, v1[tx] = c1 + c2, v2[tx] = c2 - c1, v3[tx] = c1 - c3;
  }
}

/* A^T over 4 values: e = m0 + m1 + m2 + b, o = m1 - m2 - m3 + b (b = 0 for the vertical pass) */
static void WCAT(wino_at, SFX)(const T *restrict m0, const T *restrict m1, const T *restrict m2,
                               const T *restrict m3, T *restrict e, T *restrict o, T b, int64_t n) {
  for (int64_t k = 0; k < n; k++) e[k] = m0[k] + m1[k] + m2[k] + b, o[k] = m1[k] - m2[k] - m3[k] + b;
}

static void WCAT(wino_interleave, SFX)(const T *restrict e, const T *restrict o, T *restrict y, int64_t n) {
  for (int64_t k = 0; k < n; k++) y[2 * k] = e[k], y[2 * k + 1] = o[k];
}

/* V[xi][c][t] (xi matrices vs apart, t = ty*tW + tx) = B^T d B for the tiles of one input
 * plane, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: per row of tiles, its 4 input rows
 * zero-padded (r), their vertical transform (t), then the horizontal one into V. scr holds
 * wino_scratch(g) elements (conv.c). */
static void WCAT(wino_input, SFX)(const T *x, T *V, int64_t vs, T *scr, const conv_geom *g) {
  const int64_t H = g->H, W = g->W, tH = (g->oH + 1) / 2, tW = (g->oW + 1) / 2, R = 2 * tW + 2;
  T *r = scr, *t = scr + 4 * R;
  /* window column j is input column j - pW: inside the image for j in [jlo, jhi) */
  int64_t jlo = g->pW < R ? g->pW : R, jhi = W + g->pW < R ? W + g->pW : R;
  if (jhi < jlo) jhi = jlo;
  for (int64_t ty = 0; ty < tH; ty++) {
    for (int k = 0; k < 4; k++) {
      T *rk = r + k * R;
      int64_t iy = 2 * ty - g->pH + k;
      if (iy < 0 || iy >= H) {
        memset(rk, 0, sizeof(T) * R);
        continue;
      }
      memset(rk, 0, sizeof(T) * jlo);
      if (jhi > jlo) memcpy(rk + jlo, x + iy * W + (jlo - g->pW), sizeof(T) * (jhi - jlo));
      memset(rk + jhi, 0, sizeof(T) * (R - jhi));
    }
    WCAT(wino_bt_rows, SFX)(r, r + R, r + 2 * R, r + 3 * R, t, t + R, t + 2 * R, t + 3 * R, R);
    for (int i = 0; i < 4; i++) {
      T *v = V + 4 * i * vs + ty * tW;
      WCAT(wino_bt_cols, SFX)(t + i * R, v, v + vs, v + 2 * vs, v + 3 * vs, tW);
    }
  }
}

/* y plane (oH x oW) from M[xi][t] (xi matrices ms apart), A^T = [1 1 1 0; 0 1 -1 -1], plus b;
 * per row of tiles: the vertical pass (a: first output row, c: second), the horizontal one
 * (even and odd columns), interleaved into y. */
static void WCAT(wino_output, SFX)(const T *M, int64_t ms, T *y, T b, T *scr, const conv_geom *g) {
  const int64_t oH = g->oH, oW = g->oW, tH = (oH + 1) / 2, tW = (oW + 1) / 2;
  T *a = scr, *c = scr + 4 * tW, *eo = scr + 8 * tW; /* a, c: 4 rows of tW; eo: 4 */
  for (int64_t ty = 0; ty < tH; ty++) {
    const T *m = M + ty * tW;
    for (int j = 0; j < 4; j++)
      WCAT(wino_at, SFX)(m + j * ms, m + (4 + j) * ms, m + (8 + j) * ms, m + (12 + j) * ms, a + j * tW, c + j * tW,
                         0, tW);
    WCAT(wino_at, SFX)(a, a + tW, a + 2 * tW, a + 3 * tW, eo, eo + tW, b, tW);
    WCAT(wino_at, SFX)(c, c + tW, c + 2 * tW, c + 3 * tW, eo + 2 * tW, eo + 3 * tW, b, tW);
    for (int i = 0; i < 2 && 2 * ty + i < oH; i++) {
      T *yr = y + (2 * ty + i) * oW;
      const T *e = eo + 2 * i * tW, *o = e + tW;
      WCAT(wino_interleave, SFX)(e, o, yr, oW / 2);
      if (oW & 1) yr[oW - 1] = e[tW - 1];
    }
  }
}

/* forward of q images (x, y at the first): per group, transform, 16 GEMMs, transform back.
 * V is 16 x Cg x T, M 16 x Og x T (T = q * tiles per image), scr wino_scratch(g) */
static void WCAT(wino_piece, SFX)(const T *x, const T *U, const T *b, T *y, int64_t q, T *V, T *M, T *scr,
                                  const conv_geom *g) {
  const int64_t tiles = ((g->oH + 1) / 2) * ((g->oW + 1) / 2), Tn = q * tiles, Og = g->O / g->groups;
  const int64_t HW = g->H * g->W, L = g->oH * g->oW, OC = g->O * g->Cg;
  for (int64_t gr = 0; gr < g->groups; gr++) {
    for (int64_t i = 0; i < q; i++)
      for (int64_t c = 0; c < g->Cg; c++)
        WCAT(wino_input, SFX)(x + i * g->C * HW + (gr * g->Cg + c) * HW, V + c * Tn + i * tiles, g->Cg * Tn, scr, g);
    for (int xi = 0; xi < 16; xi++)
      GEMM(0, 0, Og, Tn, g->Cg, (T)1, U + xi * OC + gr * Og * g->Cg, g->Cg, V + xi * g->Cg * Tn, Tn, (T)0,
           M + xi * Og * Tn, Tn, 0);
    for (int64_t i = 0; i < q; i++)
      for (int64_t o = 0; o < Og; o++)
        WCAT(wino_output, SFX)(M + o * Tn + i * tiles, Og * Tn, y + (i * g->O + gr * Og + o) * L,
                               b ? b[gr * Og + o] : 0, scr, g);
  }
}

#undef WCAT
#undef WCAT_
