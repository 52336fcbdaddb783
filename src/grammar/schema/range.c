/* range.c -- the arithmetic of minimum / maximum /
 * exclusive* (internal.h): bounds read exactly from their
 * decimal text (for the compiler); for the byte-at-a-time validator, can
 * an integer's or a number's text so far still end within the range, and
 * is its value within it.
 *
 * Exact decimal arithmetic, no floating point: a magnitude is fixed point
 * (integer part, 18 fraction digits; the compiler refuses bounds with
 * finer digits or above 2^53). A text's possible values are an interval
 * of magnitudes per sign, and so is the range: the question is whether
 * two intervals meet. Bounds are on the 10^-18 grid, so a value with
 * digits past the 18th (between two grid points) is in or out whole.
 */
#include "grammar/schema/internal.h"

/* ---- bounds (the compiler) ------------------------------------------- */

/* Digit i of the mantissa "int digits, then fraction digits". */
static int mant_digit(const char *in, size_t n_in, const char *fr, size_t i)
{
    return (i < n_in ? in[i] : fr[i - n_in]) - '0';
}

static long dec_exponent(const char *p, const char *end)
{
    long e = 0;
    if (p == end || (*p != 'e' && *p != 'E'))
        return 0;
    p++;
    bool neg = *p == '-';
    p += *p == '-' || *p == '+';
    for (; p < end; p++)
        e = ST_MIN(e * 10 + (*p - '0'), 100000L);
    return neg ? -e : e;
}

/* false: the magnitude is above JS_BOUND_MAX (2^53). 'v' is valid JSON. */
bool st_js_parse_dec(struct st_str v, struct js_dec *d)
{
    const char *p = v.ptr, *end = v.ptr + v.len;
    *d = (struct js_dec){ .neg = *p == '-' };
    p += d->neg;
    const char *in = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    size_t n_in = (size_t)(p - in), n_fr = 0;
    const char *fr = p;
    if (p < end && *p == '.') {
        fr = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        n_fr = (size_t)(p - fr);
    }
    long point = (long)n_in + dec_exponent(p, end);   /* mantissa digits before the point */
    for (size_t i = 0; i < n_in + n_fr; i++) {
        int dg = mant_digit(in, n_in, fr, i);
        long j = (long)i - point;   /* fraction digit j (0: tenths) */
        if (j >= 18) {
            d->fine |= dg != 0;
        } else if (j >= 0) {
            uint64_t w = 1;
            for (long t = j; t < 17; t++)
                w *= 10;
            d->fp += (uint64_t)dg * w;
        } else {
            d->ip = d->ip * 10 + (uint64_t)dg;
            if (d->ip > (uint64_t)JS_BOUND_MAX)
                return false;
        }
        d->frac |= j >= 0 && dg != 0;
    }
    for (long i = (long)(n_in + n_fr); i < point && d->ip; i++) {
        d->ip *= 10;
        if (d->ip > (uint64_t)JS_BOUND_MAX)
            return false;
    }
    d->neg &= d->ip != 0 || d->frac;   /* -0 is 0 */
    return true;
}

/* The least integer a lower bound admits, or the greatest an upper one
 * does (exclusive: the bound itself is out). */
int64_t st_js_int_bound(const struct js_dec *d, bool upper, bool exclusive)
{
    int64_t ip = (int64_t)d->ip, f = d->frac;
    int64_t fl = d->neg ? -(ip + f) : ip;   /* floor */
    int64_t ce = d->neg ? -ip : ip + f;     /* ceil */
    if (!upper)
        return exclusive ? fl + 1 : ce;
    return exclusive ? ce - 1 : fl;
}

/* Signed order of two exact values (fine digits: none, bounds refuse them). */
int st_js_dec_cmp(const struct js_dec *a, const struct js_dec *b)
{
    int m = a->ip != b->ip ? (a->ip < b->ip ? -1 : 1) : (a->fp != b->fp ? (a->fp < b->fp ? -1
                                                                              : 1) : 0);
    if (a->neg != b->neg)
        return a->neg ? -1 : 1;
    return a->neg ? -m : m;
}

/* ---- integers (JS_RANGE_INT) ----------------------------------------- */

/* The magnitudes [*a, *b] a ranged integer of this sign may have (empty:
 * *a > *b). "-0" is not written under a range (0 is). */
static void mag_range(const struct js_node *n, bool neg, uint64_t *a, uint64_t *b)
{
    *a = 1;
    *b = 0;
    if (neg && n->imin <= -1) {
        *a = n->imax <= -1 ? (uint64_t)-n->imax : 1;
        *b = (uint64_t)-n->imin;
    } else if (!neg && n->imax >= 0) {
        *a = n->imin > 0 ? (uint64_t)n->imin : 0;
        *b = (uint64_t)n->imax;
    }
}

/* Some magnitude in [lo, hi] is a multiple of n->mult (0: any is). */
static bool has_multiple(const struct js_node *n, uint64_t lo, uint64_t hi)
{
    if (lo > hi)
        return false;
    if (n->mult <= 1)
        return true;
    uint64_t r = lo % n->mult;
    return r == 0 || hi - lo >= n->mult - r;
}

/* Digits of magnitude m were written (m 0 and 'grows': only the '-'):
 * can the integer still land in the node's range (and be a multiple of
 * multipleOf)? With 'grows' false,
 * is it there now? More digits make m*10^k .. (m+1)*10^k-1. */
bool st_js_int_reach(const struct js_node *n, bool neg, uint64_t m, bool grows)
{
    uint64_t a, b;
    mag_range(n, neg, &a, &b);
    if (a > b)
        return false;
    if (!grows)
        return m >= a && m <= b && has_multiple(n, m, m);
    if (m == 0)
        return has_multiple(n, ST_MAX(a, 1), b);   /* "-": any magnitude from 1 */
    for (uint64_t lo = m, span = 1; lo <= b; lo *= 10, span *= 10) {
        uint64_t hi = lo + span - 1;
        if (hi >= a && has_multiple(n, ST_MAX(lo, a), ST_MIN(hi, b)))
            return true;
        if (lo > b / 10)
            break;
    }
    return false;
}

/* ---- numbers (JS_RANGE_NUM) ------------------------------------------ */


/* Magnitudes from lo to hi, either end open; hi_inf: no upper end. */
struct span {
    struct js_fx lo, hi;
    bool lo_open, hi_open, hi_inf;
};

static int fx_cmp(struct js_fx a, struct js_fx b)
{
    if (a.ip != b.ip)
        return a.ip < b.ip ? -1 : 1;
    return a.fp < b.fp ? -1 : a.fp > b.fp;
}

/* a + step 10^-18 units (step <= 10^18); saturates far above 2^53. */
static struct js_fx fx_add(struct js_fx a, uint64_t step)
{
    a.fp += step;
    if (a.fp >= JS_FX_ONE) {
        a.fp -= JS_FX_ONE;
        a.ip++;
    }
    return a;
}

static bool span_meet(const struct span *x, const struct span *y)
{
    int c = fx_cmp(x->lo, y->lo);
    struct js_fx lo = c >= 0 ? x->lo : y->lo;
    bool lo_open = c > 0 ? x->lo_open : c < 0 ? y->lo_open : (x->lo_open || y->lo_open);
    if (x->hi_inf && y->hi_inf)
        return true;
    struct js_fx hi;
    bool hi_open;
    int d = x->hi_inf ? 1 : y->hi_inf ? -1 : fx_cmp(x->hi, y->hi);
    if (d > 0) {
        hi = y->hi;
        hi_open = y->hi_open;
    } else {
        hi = x->hi;
        hi_open = d < 0 ? x->hi_open : (x->hi_open || y->hi_open);
    }
    int e = fx_cmp(lo, hi);
    return e < 0 || (e == 0 && !lo_open && !hi_open);
}

/* The magnitudes of sign 'neg' the range of node n holds (may be empty). */
static struct span allowed(const struct js_node *n, bool neg)
{
    static const struct span none = { .lo = { 1, 0 } };   /* lo above hi */
    struct span s = { .hi_inf = true };
    unsigned f = n->nflags;
    bool lo = f & JS_NR_LO, hi = f & JS_NR_HI;
    if (!neg) {
        if (lo && !(f & JS_NR_LO_NEG)) {
            s.lo = n->nlo;
            s.lo_open = f & JS_NR_LO_OPEN;
        }
        if (hi && (f & JS_NR_HI_NEG))
            return none;
        if (hi) {
            s.hi = n->nhi;
            s.hi_open = f & JS_NR_HI_OPEN;
            s.hi_inf = false;
        }
        return s;
    }
    /* value -m: m <= -lo, m >= -hi */
    if (hi && ((f & JS_NR_HI_NEG) || fx_cmp(n->nhi, (struct js_fx){ 0, 0 }) == 0)) {
        s.lo = n->nhi;   /* (hi 0 exclusive: m > 0) */
        s.lo_open = f & JS_NR_HI_OPEN;
    }
    if (lo && !(f & JS_NR_LO_NEG) && fx_cmp(n->nlo, (struct js_fx){ 0, 0 }) > 0)
        return none;   /* the range starts above 0 */
    if (lo) {
        s.hi = n->nlo;   /* lo is 0 here unless negative */
        s.hi_open = f & JS_NR_LO_OPEN;
        s.hi_inf = false;
    }
    return s;
}

static bool int_part_reach(const struct span *a, uint64_t m)
{
    if (a->hi_inf)
        return true;   /* enough digits pass any lower end */
    struct span r = { .hi_open = true };
    for (uint64_t lo = m, span = 1; lo <= a->hi.ip; lo *= 10, span *= 10) {
        r.lo = (struct js_fx){ lo, 0 };
        r.hi = (struct js_fx){ lo + span, 0 };   /* m*10^k .. (m+1)*10^k, open */
        if (span_meet(&r, a))
            return true;
        if (lo > a->hi.ip / 10)
            break;
    }
    return false;
}

bool st_js_num_reach(const struct js_node *n, const struct js_numtext *t)
{
    struct span a = allowed(n, t->neg), r = { .hi_open = true };
    switch (t->part) {
    case JS_NT_SIGN:
        r.hi_inf = true;
        return span_meet(&r, &a);
    case JS_NT_ZERO:
        r.hi = (struct js_fx){ 1, 0 };
        return span_meet(&r, &a);
    case JS_NT_INT:
        return int_part_reach(&a, t->v.ip);
    default: {   /* JS_NT_FRAC */
        uint64_t step = 1;
        for (unsigned i = t->n_frac; i < 18; i++)
            step *= 10;
        r.lo = t->v;
        r.lo_open = t->tail;
        r.hi = fx_add(t->v, step);
        return span_meet(&r, &a);
    }
    }
}

bool st_js_num_in_range(const struct js_node *n, bool neg, struct js_fx v, bool tail)
{
    struct span a = allowed(n, neg);
    struct span r = { .lo = v, .hi = v };
    if (tail) {   /* strictly between v and the next grid point */
        r.hi = fx_add(v, 1);
        r.lo_open = r.hi_open = true;
    }
    return span_meet(&r, &a);
}
