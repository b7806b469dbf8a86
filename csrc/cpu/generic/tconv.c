/* generic/tconv.c: the direct loop of torch.conv2/xcorr2/conv3/xcorr3 for one dtype (included by
 * tconv.c through generate_all.h); sums in accreal, tconv.c's accumulator of the dtype. */

/* out[q][od][oh][ow] = sum over kernel planes pk, taps kd, kh, kw of x[p][id][ih][iw] *
 * k[q][pk][kd][kh][kw] (flipped for conv), p = pk or q (diagonal), id = od - sD + kd and so on;
 * taps outside the input add nothing. x (P, D, H, W), k (Q, Pk, kD, kH, kW), out (Q, oD, oH, oW),
 * each with its strides */
static void MT_G(conv)(const geom *g, scalar_t *o, const scalar_t *x, const scalar_t *k) {
  int64_t rows = g->Q * g->oD * g->oH;
#pragma omp parallel for schedule(static) if (rows * g->oW * g->Pk * g->kD * g->kH * g->kW > MT_PARALLEL_GRAIN)
  for (int64_t r = 0; r < rows; r++) {
    int64_t q = r / (g->oD * g->oH), od = r / g->oH % g->oD, oh = r % g->oH;
    for (int64_t ow = 0; ow < g->oW; ow++) {
      MT_G(accreal) acc = 0;
      for (int64_t pk = 0; pk < g->Pk; pk++) {
        int64_t p = g->diagonal ? q : pk;
        for (int64_t kd = 0; kd < g->kD; kd++) {
          int64_t id = od - g->sD + kd;
          if (id < 0 || id >= g->D) continue;
          for (int64_t kh = 0; kh < g->kH; kh++) {
            int64_t ih = oh - g->sH + kh;
            if (ih < 0 || ih >= g->H) continue;
            const scalar_t *x_row = x + p * g->xs[0] + id * g->xs[1] + ih * g->xs[2];
            const scalar_t *k_row = k + q * g->ks[0] + pk * g->ks[1] + (g->flip ? g->kD - 1 - kd : kd) * g->ks[2] +
                                    (g->flip ? g->kH - 1 - kh : kh) * g->ks[3];
            for (int64_t kw = 0; kw < g->kW; kw++) {
              int64_t iw = ow - g->sW + kw;
              if (iw < 0 || iw >= g->W) continue;
              acc += (MT_G(accreal))MT_LD(x_row + iw * g->xs[3]) *
                     (MT_G(accreal))MT_LD(k_row + (g->flip ? g->kW - 1 - kw : kw) * g->ks[4]);
            }
          }
        }
      }
      MT_ST(o + q * g->os[0] + od * g->os[1] + oh * g->os[2] + ow * g->os[3], acc);
    }
  }
}
